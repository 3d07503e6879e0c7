// JPEG through libjpeg-turbo's libjpeg API, set up as Pillow's JpegDecode.c sets it: the library's
// defaults (JDCT_ISLOW, fancy upsampling), output in the file's own colour space, grayscale → L,
// YCbCr / RGB → RGB, four components → CMYK read as Adobe's inverted CMYK ("CMYK;I", what
// JpegImagePlugin assumes for every 4-component file) then Convert.c's cmyk2rgb.
//
// Errors: libjpeg's error_exit must not return. Throwing a C++ exception from it would unwind
// through libjpeg's C frames, which Debian compiles without unwind tables (-fexceptions), so the
// unwinder may terminate or skip cleanup. So error_exit longjmps instead, to a setjmp in
// `guarded`, whose frames down to the library hold only trivially destructible state (the lambda
// captures pointers; no C++ object with a destructor lives between the setjmp and libjpeg). The
// message is formatted into a fixed buffer first; the C++ caller turns it into an il::Error after
// the jump, and destroys the decompressor in every case.
// jpeglib.h uses size_t and FILE without including their headers.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode_formats.h"
#include "image/exif_orientation.h"

namespace il::image::detail {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg hands error_exit a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  // libjpeg's memory source inserts a fake EOI when the data ends early and warns JWRN_JPEG_EOF.
  // Pillow's source suspends instead, and Pillow reports "image file is truncated" when the data
  // ends before the last scanline; we record the warning and decide the same way.
  bool hit_end = false;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (corrupt entropy data, extraneous bytes) are ignored, as Pillow ignores them; the
// trace messages too. Only the end of data is remembered.
void on_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->hit_end = true;
}

// Runs `call` (libjpeg calls only, trivially destructible captures) with the jump target set.
// Returns false when libjpeg reported an error (the message is in err.message).
// A progressive file may hold any number of scans, each a pass over the whole coefficient
// buffer: a small hostile file could keep a decoder busy for minutes. Real encoders write about
// ten; libjpeg-turbo's own fuzzers and TurboJPEG's scan limit stop at 500. Pillow has no limit,
// so a file past it is the one place this decoder refuses what PIL decodes.
constexpr int kMaxScans = 500;

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (!cinfo->is_decompressor || d->input_scan_number <= kMaxScans) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  std::snprintf(err->message, sizeof err->message, "more than %d progressive scans", kMaxScans);
  std::longjmp(err->jump, 1);  // inside a guarded libjpeg call, like on_error
}

template <typename Call>
[[gnu::noinline]] bool guarded(JpegErrorManager& err, Call&& call) {
  if (setjmp(err.jump) != 0) return false;
  call();
  return true;
}

constexpr unsigned kApp1 = JPEG_APP0 + 1;

bool starts_with(const jpeg_saved_marker_ptr m, const char* prefix, std::size_t n) {
  return m->data_length >= n && std::memcmp(m->data, prefix, n) == 0;
}

std::uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}

std::uint8_t clip8(int v) { return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

}  // namespace

DecodedImage decode_jpeg(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits) {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.message[0] = '\0';
  auto fail = [&](const char* what) {
    std::string msg = err.message;
    jpeg_destroy_decompress(&cinfo);
    return make_error("image ", name, ": ", what, " JPEG: ", msg);
  };
  jpeg_create_decompress(&cinfo);  // cannot fail past the struct size check, which is static here
  jpeg_progress_mgr progress{};
  progress.progress_monitor = on_progress;
  cinfo.progress = &progress;

  j_decompress_ptr c = &cinfo;
  const std::uint8_t* data = bytes.data();
  const auto size = static_cast<unsigned long>(bytes.size());
  if (!guarded(err, [c, data, size] {
        jpeg_mem_src(c, data, size);
        jpeg_save_markers(c, JPEG_APP0, 16);  // JFIF's density unit (see below)
        jpeg_save_markers(c, kApp1, 0xFFFF);
        jpeg_read_header(c, TRUE);
      })) {
    throw fail(err.hit_end ? "truncated" : "corrupt");
  }
  if (err.hit_end) throw fail("truncated");

  // Pillow's mode from the component count; libjpeg converts YCbCr to RGB and YCCK to CMYK.
  const int components = cinfo.num_components;
  if (components != 1 && components != 3 && components != 4) {
    jpeg_destroy_decompress(&cinfo);
    throw make_error("image ", name, ": unsupported JPEG with ", components,
                     " components (PIL reads 1, 3 or 4)");
  }
  cinfo.out_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  try {
    check_pixel_limit(cinfo.image_width, cinfo.image_height, name, "JPEG", limits);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }

  // The metadata as Pillow 12's JpegImagePlugin collects it: every APP1 starting "Exif\0\0"
  // joined into one block (the first whole, the others after their prefix), the last XMP
  // packet. When no JFIF segment gives the density (unit 1 or 2), Pillow reads the EXIF at open
  // for the dpi, catching the error of a block that is not TIFF and caching the empty result, so
  // such a block then means no orientation at all (not even XMP's); otherwise exif_transpose
  // meets the block and raises.
  std::vector<std::uint8_t> exif;
  bool has_exif = false;
  bool dpi_known = false;
  std::string_view xmp;
  static constexpr char xmp_prefix[] = "http://ns.adobe.com/xap/1.0/";
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0) {
      if (starts_with(m, "JFIF", 4) && m->data_length >= 12 && (m->data[7] == 1 || m->data[7] == 2)) {
        dpi_known = true;
      }
    } else if (starts_with(m, "Exif\0\0", 6)) {
      exif.insert(exif.end(), m->data + (has_exif ? 6 : 0), m->data + m->data_length);
      has_exif = true;
    } else if (starts_with(m, xmp_prefix, sizeof(xmp_prefix))) {
      xmp = {reinterpret_cast<const char*>(m->data) + sizeof(xmp_prefix), m->data_length - sizeof(xmp_prefix)};
    }
  }
  if (has_exif && !dpi_known && !exif_is_tiff(exif)) {
    exif.clear();
    xmp = {};
  }
  DecodedImage out;
  try {
    out.orientation = file_orientation(exif, has_exif, xmp, name);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }

  if (!guarded(err, [c] { jpeg_start_decompress(c); })) throw fail("corrupt");
  // Progressive files are read whole by jpeg_start_decompress: running out there is truncation.
  if (err.hit_end) throw fail("truncated");

  const std::size_t width = cinfo.output_width, height = cinfo.output_height;
  const int channels = cinfo.output_components;
  out.image = make_rgb(width, height);
  std::string row_buffer(width * static_cast<std::size_t>(channels), '\0');
  auto* row = reinterpret_cast<std::uint8_t*>(row_buffer.data());
  std::uint8_t* rgb = out.image.pixels.data();
  for (std::size_t y = 0; y < height; ++y) {
    JSAMPROW rows[1] = {row};
    if (!guarded(err, [c, &rows] { jpeg_read_scanlines(c, rows, 1); })) throw fail("corrupt");
    if (err.hit_end) throw fail("truncated");
    std::uint8_t* dst = rgb + y * width * 3;
    if (channels == 1) {
      for (std::size_t x = 0; x < width; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = row[x];
    } else if (channels == 3) {
      std::memcpy(dst, row, width * 3);
    } else {
      for (std::size_t x = 0; x < width; ++x) {
        // "CMYK;I": the stored values are inverted; cmyk2rgb: channel = nk - nk·c/255 with
        // nk = 255 - k, in Pillow's rounded integer arithmetic.
        const std::uint8_t* p = row + 4 * x;
        const int nk = p[3];  // 255 - (255 - stored k)
        for (int ch = 0; ch < 3; ++ch) dst[3 * x + ch] = clip8(nk - muldiv255(255 - p[ch], nk));
      }
    }
  }
  // Data missing only after the last scanline (the EOI marker) does not matter to Pillow.
  guarded(err, [c] { jpeg_finish_decompress(c); });
  jpeg_destroy_decompress(&cinfo);
  return out;
}

}  // namespace il::image::detail
