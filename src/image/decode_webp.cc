// WebP through libwebp's animation decoder, as Pillow's _webp.c reads every WebP (still or
// animated): WebPAnimDecoder in non-premultiplied RGBA, the first frame composited on the
// transparent canvas as libwebp does; convert("RGB") drops the alpha. The EXIF and XMP chunks are
// the demuxer's first of each, as Pillow's get_chunk gives them. libwebp reports errors by return
// value, so nothing here jumps.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "image/decode_formats.h"
#include "image/exif_orientation.h"

namespace il::image::detail {
namespace {

struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

}  // namespace

DecodedImage decode_webp(std::span<const std::uint8_t> bytes, std::string_view name, const DecodeLimits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) throw make_error("image ", name, ": truncated WebP (incomplete header)");
  check(status == VP8_STATUS_OK, "image ", name, ": corrupt WebP (unreadable header, libwebp status ", status, ")");
  // The canvas size for an extended (VP8X) file, the frame's otherwise: what gets allocated.
  check_pixel_limit(static_cast<std::uint64_t>(features.width), static_cast<std::uint64_t>(features.height), name,
                    "WebP", limits);

  WebPAnimDecoderOptions options;
  check(WebPAnimDecoderOptionsInit(&options) != 0, "image ", name, ": libwebp version mismatch");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> decoder(WebPAnimDecoderNew(&data, &options));
  check(decoder != nullptr, "image ", name, ": corrupt or truncated WebP (libwebp cannot parse its chunks)");
  WebPAnimInfo info;
  check(WebPAnimDecoderGetInfo(decoder.get(), &info) != 0, "image ", name, ": corrupt WebP");
  check_pixel_limit(info.canvas_width, info.canvas_height, name, "WebP", limits);

  DecodedImage out;
  const WebPDemuxer* demux = WebPAnimDecoderGetDemuxer(decoder.get());
  std::span<const std::uint8_t> exif;
  bool has_exif = false;
  std::string_view xmp;
  WebPChunkIterator chunk;
  if (WebPDemuxGetChunk(demux, "EXIF", 1, &chunk) != 0) {
    // Pillow stores the chunk only when it is not empty.
    if (chunk.chunk.size > 0) {
      exif = {chunk.chunk.bytes, chunk.chunk.size};
      has_exif = true;
    }
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  if (WebPDemuxGetChunk(demux, "XMP ", 1, &chunk) != 0) {
    xmp = {reinterpret_cast<const char*>(chunk.chunk.bytes), chunk.chunk.size};
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  // The spans point into `bytes` (the demuxer does not copy), so they outlive the iterators.
  out.orientation = file_orientation(exif, has_exif, xmp, name);

  std::uint8_t* rgba = nullptr;
  int timestamp = 0;
  check(WebPAnimDecoderGetNext(decoder.get(), &rgba, &timestamp) != 0, "image ", name,
        ": corrupt or truncated WebP (its first frame does not decode)");
  const std::size_t w = info.canvas_width, h = info.canvas_height;
  out.image = make_rgb(w, h);
  std::uint8_t* dst = out.image.pixels.data();
  for (std::size_t i = 0; i < w * h; ++i) {
    dst[3 * i] = rgba[4 * i];
    dst[3 * i + 1] = rgba[4 * i + 1];
    dst[3 * i + 2] = rgba[4 * i + 2];
  }
  return out;
}

}  // namespace il::image::detail
