// PNG through libpng, read raw (no libpng transform but unpacking sub-byte samples and
// de-interlacing) and converted to RGB as Pillow's PngImagePlugin modes convert:
//   gray 1/2/4/8 bits: 1, L;2, L;4, L → value scaled to 0..255 and replicated;
//   gray 16 bits: I;16 → RGB clips at 255 (a value above 255 becomes 255, not its high byte);
//   RGB / RGBA / gray+alpha 16 bits: RGB;16B, RGBA;16B, LA;16B keep each sample's high byte;
//   palette: the PLTE colour, black past its end (tRNS is ignored by convert("RGB"));
//   alpha is dropped.
// Pillow checks the CRC of every chunk before the first IDAT and of none after it (IDAT included);
// a pre-scan here does the same, and libpng is told to ignore CRCs. APNG: libpng reads IDAT, the
// default image, which is PIL's first frame; an fcTL before IDAT is checked as Pillow checks it.
//
// Errors: libpng calls our error function, then longjmps to the jmp_buf of png_jmpbuf. As for
// libjpeg (decode_jpeg.cc), the setjmp is in `guarded`, whose frames down to libpng hold only
// trivially destructible state; the message is copied to a fixed buffer before the jump.
#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode_formats.h"
#include "image/exif_orientation.h"

namespace il::image::detail {
namespace {

struct PngState {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 8;  // after the signature, checked by the pre-scan
  char message[256] = {};
  bool hit_end = false;
};

void on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->bytes.size() - s->pos) {
    s->hit_end = true;
    png_error(png, "the data ends early");
  }
  std::memcpy(out, s->bytes.data() + s->pos, n);
  s->pos += n;
}

template <typename Call>
[[gnu::noinline]] bool guarded(png_structp png, Call&& call) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;
  call();
  return true;
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// The metadata PngImagePlugin puts in Image.info that Image.getexif reads.
struct PngMetadata {
  std::optional<std::vector<std::uint8_t>> exif;  // eXIf (or a text chunk keyed "exif")
  std::optional<std::string> raw_profile_exif;    // ImageMagick's hex "Raw profile type exif"
  std::optional<std::string> xmp;                 // text keyed "XML:com.adobe.xmp"
};

// What getexif sees: the chunks before IDAT when they hold an EXIF block (Pillow's PNG getexif
// loads the rest of the file only when they do not), else all of them.
struct PngChunks {
  PngMetadata before_idat;
  PngMetadata all;
  const PngMetadata& seen_by_getexif() const { return before_idat.exif ? before_idat : all; }
};

// zlib-decompresses a zTXt / iTXt text as Pillow's _safe_zlib_decompress: at most 1 MiB out
// (more is an error), a stream that simply ends early gives what it gave, corrupt data is an error.
std::string inflate_text(std::string_view in, std::string_view name) {
  constexpr std::size_t kMaxText = 1 << 20;
  std::string out(kMaxText + 1, '\0');
  z_stream z{};
  check(inflateInit(&z) == Z_OK, "image ", name, ": out of memory inflating a PNG text chunk");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const std::size_t produced = out.size() - z.avail_out;
  inflateEnd(&z);
  check(rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK, "image ", name,
        ": corrupt PNG (a compressed text chunk does not inflate)");
  check(produced <= kMaxText, "image ", name, ": corrupt PNG (a compressed text chunk is over 1 MiB)");
  out.resize(produced);
  return out;
}

// Reads a tEXt, zTXt or iTXt chunk as PngImagePlugin does and stores the keys getexif uses.
void read_text_chunk(std::string_view type, std::string_view body, std::string_view name, PngMetadata& meta) {
  std::string_view key = body, value;
  if (const std::size_t nul = body.find('\0'); nul != std::string_view::npos) {
    key = body.substr(0, nul);
    value = body.substr(nul + 1);
  } else if (type == "iTXt") {
    return;
  }
  std::string text;
  if (type == "tEXt") {
    text.assign(value);
  } else if (type == "zTXt") {
    check(value.empty() || value[0] == 0, "image ", name, ": corrupt PNG (unknown zTXt compression method)");
    text = value.empty() ? std::string() : inflate_text(value.substr(1), name);
  } else {  // iTXt: compression flag, method, language\0, translated keyword\0, text
    if (value.size() < 2) return;
    const char flag = value[0], method = value[1];
    std::string_view rest = value.substr(2);
    for (int i = 0; i < 2; ++i) {
      const std::size_t z = rest.find('\0');
      if (z == std::string_view::npos) return;
      rest.remove_prefix(z + 1);
    }
    if (flag != 0) {
      if (method != 0) return;
      text = inflate_text(rest, name);
    } else {
      text.assign(rest);
    }
  }
  if (key == "exif" && type == "tEXt") {  // stored as bytes by chunk_tEXt only
    meta.exif.emplace(text.begin(), text.end());
  } else if (key == "Raw profile type exif") {
    meta.raw_profile_exif = std::move(text);
  } else if (key == "XML:com.adobe.xmp") {
    meta.xmp = std::move(text);
  }
}

// bytes.fromhex of the lines after the third of an ImageMagick raw profile, as Pillow decodes it:
// ASCII whitespace between byte pairs is skipped, anything else not hex is an error.
std::vector<std::uint8_t> raw_profile_bytes(std::string_view profile, std::string_view name) {
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t nl = profile.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  std::string hex;
  for (char ch : profile.substr(start)) {
    if (ch != '\n') hex += ch;
  }
  auto digit = [](char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
  };
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < hex.size();) {
    const char ch = hex[i];
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f') {
      ++i;
      continue;
    }
    const int hi = digit(ch), lo = i + 1 < hex.size() ? digit(hex[i + 1]) : -1;
    check(hi >= 0 && lo >= 0, "image ", name, ": corrupt PNG (its \"Raw profile type exif\" is not hex)");
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

PngChunks walk_chunks(std::span<const std::uint8_t> b, std::string_view name, const DecodeLimits& limits) {
  PngChunks found;
  bool seen_idat = false;
  bool seen_fctl = false;
  std::size_t pos = 8;
  std::uint64_t width = 0, height = 0;
  while (true) {
    if (b.size() - pos < 8) {
      check(seen_idat, "image ", name, ": truncated PNG (the data ends before the image data)");
      break;
    }
    const std::uint32_t len = be32(&b[pos]);
    const std::uint8_t* type = &b[pos + 4];
    const std::string_view tname(reinterpret_cast<const char*>(type), 4);
    const bool complete = len <= 0x7FFFFFFFu && b.size() - pos - 8 >= std::uint64_t{len} + 4;
    const bool is_idat = tname == "IDAT";
    if (!seen_idat && !is_idat) {
      check(complete, "image ", name, ": truncated PNG (chunk ", tname, " runs past the end)");
      const std::uint32_t crc = static_cast<std::uint32_t>(crc32(crc32(0, type, 4), &b[pos + 8], len));
      check(crc == be32(&b[pos + 8 + len]), "image ", name, ": corrupt PNG (bad checksum in chunk ", tname, ")");
    }
    if (!complete) break;  // after the image data Pillow stops reading quietly
    const std::uint8_t* d = &b[pos + 8];
    if (pos == 8) {
      check(tname == "IHDR" && len >= 8, "image ", name, ": corrupt PNG (no IHDR chunk first)");
      width = be32(d);
      height = be32(d + 4);
      check_pixel_limit(width, height, name, "PNG", limits);
    }
    if (is_idat && !seen_idat) {
      seen_idat = true;
      found.before_idat = found.all;
    }
    if (tname == "IEND") break;
    if (tname == "eXIf") {
      // PngImagePlugin stores "Exif\0\0" + the chunk; a later one replaces an earlier one.
      std::vector<std::uint8_t> exif = {'E', 'x', 'i', 'f', 0, 0};
      exif.insert(exif.end(), d, d + len);
      found.all.exif = std::move(exif);
    } else if (tname == "tEXt" || tname == "zTXt" || tname == "iTXt") {
      read_text_chunk(tname, std::string_view(reinterpret_cast<const char*>(d), len), name, found.all);
    } else if (tname == "fcTL" && !seen_idat && !seen_fctl) {
      // Pillow decodes IDAT into the first frame's rectangle when an fcTL precedes it.
      seen_fctl = true;
      check(len >= 26, "image ", name, ": corrupt APNG (truncated fcTL chunk)");
      check(be32(d) == 0, "image ", name, ": corrupt APNG (frame sequence errors)");
      const std::uint64_t fw = be32(d + 4), fh = be32(d + 8), fx = be32(d + 12), fy = be32(d + 16);
      check(fx + fw <= width && fy + fh <= height, "image ", name, ": corrupt APNG (invalid frames)");
      check(fx == 0 && fy == 0 && fw == width && fh == height, "image ", name,
            ": unsupported APNG (its first frame, ", fw, "x", fh, " at ", fx, ",", fy,
            ", does not cover the ", width, "x", height, " canvas)");
    }
    pos += 12 + std::size_t{len};
  }
  if (!seen_idat) found.before_idat = found.all;
  return found;
}

std::uint8_t gray_scale(unsigned v, int bit_depth) {
  switch (bit_depth) {
    case 1: return v ? 255 : 0;
    case 2: return static_cast<std::uint8_t>(v * 85);
    case 4: return static_cast<std::uint8_t>(v * 17);
    default: return static_cast<std::uint8_t>(v);
  }
}

}  // namespace

DecodedImage decode_png(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits) {
  const PngChunks chunks = walk_chunks(bytes, name, limits);
  const PngMetadata& meta = chunks.seen_by_getexif();
  std::vector<std::uint8_t> exif;
  if (meta.exif) {
    exif = *meta.exif;
  } else if (meta.raw_profile_exif) {
    exif = raw_profile_bytes(*meta.raw_profile_exif, name);
  }
  DecodedImage out;
  out.orientation = file_orientation(exif, meta.exif || meta.raw_profile_exif, meta.xmp.value_or(""), name);

  PngState state;
  state.bytes = bytes;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
  check(png != nullptr, "image ", name, ": out of memory creating the PNG decoder");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw make_error("image ", name, ": out of memory creating the PNG decoder");
  }
  auto fail = [&](const char* what) {
    const std::string msg = state.message;
    png_destroy_read_struct(&png, &info, nullptr);
    return make_error("image ", name, ": ", state.hit_end ? "truncated" : what, " PNG: ", msg);
  };

  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0, passes = 1;
  png_colorp plte = nullptr;
  int plte_size = 0;
  if (!guarded(png, [&] {
        png_set_read_fn(png, &state, on_read);
        png_set_sig_bytes(png, 8);
        png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
#ifdef PNG_IGNORE_ADLER32
        png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
        png_set_user_limits(png, 0x7FFFFFFF, 0x7FFFFFFF);
        png_read_info(png, info);
        png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, nullptr, nullptr);
        if (color_type == PNG_COLOR_TYPE_PALETTE) png_get_PLTE(png, info, &plte, &plte_size);
        if (bit_depth < 8) png_set_packing(png);
        passes = png_set_interlace_handling(png);
        png_read_update_info(png, info);
      })) {
    throw fail("corrupt");
  }
  (void)passes;
  // The pre-scan checked IHDR's size against the limit; libpng has validated it since.
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<std::uint8_t> raw(row_bytes * height);
  std::vector<png_bytep> rows(height);
  for (std::size_t y = 0; y < height; ++y) rows[y] = raw.data() + y * row_bytes;
  png_bytepp row_ptrs = rows.data();
  if (!guarded(png, [png, row_ptrs] { png_read_image(png, row_ptrs); })) throw fail("corrupt");
  // What follows the image data (IEND, late chunks) does not matter to Pillow.
  guarded(png, [png] { png_read_end(png, nullptr); });

  // Pillow's palette: the PLTE colours, and black for an index past them (Pillow 12.3, the GPU
  // machine's; Debian's Pillow 9.4 gave a grey ramp there).
  std::uint8_t palette[256][3] = {};
  for (int i = 0; i < plte_size && i < 256; ++i) {
    palette[i][0] = plte[i].red;
    palette[i][1] = plte[i].green;
    palette[i][2] = plte[i].blue;
  }
  const int channels = png_get_channels(png, info);
  png_destroy_read_struct(&png, &info, nullptr);

  out.image = make_rgb(width, height);
  const int sample_bytes = bit_depth == 16 ? 2 : 1;
  for (std::size_t y = 0; y < height; ++y) {
    const std::uint8_t* src = raw.data() + y * row_bytes;
    std::uint8_t* dst = out.image.pixels.data() + y * width * 3;
    for (std::size_t x = 0; x < width; ++x, dst += 3) {
      const std::uint8_t* p = src + x * static_cast<std::size_t>(channels * sample_bytes);
      switch (color_type) {
        case PNG_COLOR_TYPE_GRAY:
        case PNG_COLOR_TYPE_GRAY_ALPHA: {
          std::uint8_t g;
          if (bit_depth == 16) {
            // I;16 clips to 255; LA;16B (gray + alpha) keeps the high byte.
            const unsigned v = (unsigned{p[0]} << 8) | p[1];
            g = color_type == PNG_COLOR_TYPE_GRAY ? static_cast<std::uint8_t>(v > 255 ? 255 : v) : p[0];
          } else {
            g = gray_scale(p[0], bit_depth);
          }
          dst[0] = dst[1] = dst[2] = g;
          break;
        }
        case PNG_COLOR_TYPE_PALETTE:
          std::memcpy(dst, palette[p[0]], 3);
          break;
        default:  // RGB, RGBA: the high byte of 16-bit samples
          for (int c = 0; c < 3; ++c) dst[c] = p[c * sample_bytes];
          break;
      }
    }
  }
  return out;
}

}  // namespace il::image::detail
