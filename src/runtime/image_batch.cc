#include "runtime/image_batch.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace il::runtime {

void validate_images(const std::vector<ImageInput>& images, const models::ImageGeometry& g) {
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageInput& im = images[i];
    check(im.channels == static_cast<std::size_t>(g.channels) && im.height == static_cast<std::size_t>(g.height) &&
              im.width == static_cast<std::size_t>(g.width),
          "image ", i, ": pixel_values of ", im.channels, " × ", im.height, " × ", im.width, ", but the model takes ",
          g.channels, " × ", g.height, " × ", g.width, " (channels × height × width)");
    if (!im.bytes.empty()) {
      check(im.pixels.empty(), "image ", i, ": holds both pixel values and bytes");
      check(im.bytes.size() == im.channels * im.height * im.width, "image ", i, ": ", im.bytes.size(), " bytes for ",
            im.height, " × ", im.width, " pixels of ", im.channels, " channels");
      check(im.byte_values && im.byte_values->size() == im.channels * 256, "image ", i, ": its byte value table ",
            "holds ", im.byte_values ? im.byte_values->size() : 0, " values, not ", im.channels, " × 256");
      for (std::size_t k = 0; k < im.byte_values->size(); ++k)
        check(std::isfinite((*im.byte_values)[k]), "image ", i, ": byte value ", k % 256, " of channel ", k / 256,
              " is not finite");
      continue;
    }
    check(im.pixels.size() == im.channels * im.height * im.width, "image ", i, ": ", im.pixels.size(),
          " pixel values for ", im.channels, " × ", im.height, " × ", im.width);
    for (std::size_t k = 0; k < im.pixels.size(); ++k)
      check(std::isfinite(im.pixels[k]), "image ", i, ": pixel value ", k, " (channel ", k / (im.height * im.width),
            ", row ", (k / im.width) % im.height, ", column ", k % im.width, ") is not finite");
  }
}

std::vector<BatchRange> pack_images(std::size_t count, std::size_t tokens_per_image, std::size_t max_tokens) {
  check(tokens_per_image > 0 && tokens_per_image <= max_tokens, "an image of ", tokens_per_image,
        " patches does not fit a batch of ", max_tokens, " tokens");
  const std::size_t per_batch = max_tokens / tokens_per_image;
  std::vector<BatchRange> out;
  for (std::size_t first = 0; first < count; first += per_batch)
    out.push_back({first, std::min(per_batch, count - first)});
  return out;
}

namespace {

// Whether every image of the range is compact with the same byte values (one table for the
// batch: plan::Batch::byte_values).
bool one_byte_table(const std::vector<ImageInput>& images, const BatchRange& range) {
  const ImageInput& first = images[range.first];
  if (!first.compact() || !first.byte_values) return false;
  for (std::size_t s = 1; s < range.count; ++s) {
    const ImageInput& im = images[range.first + s];
    if (!im.compact() || !im.byte_values) return false;
    if (im.byte_values != first.byte_values && *im.byte_values != *first.byte_values) return false;
  }
  return true;
}

}  // namespace

plan::Batch make_image_batch(const std::vector<ImageInput>& images, const BatchRange& range,
                             const models::ImageGeometry& g) {
  const std::size_t n = g.patches(), dim = g.patch_dim(), P = static_cast<std::size_t>(g.patch);
  const std::size_t cols = static_cast<std::size_t>(g.grid_cols()), rows = static_cast<std::size_t>(g.grid_rows());
  plan::Batch b;
  b.patch_dim = dim;
  b.tokens.assign(range.count * n, 0);
  b.positions.resize(range.count * n);
  b.seq_starts.resize(range.count + 1);
  for (std::size_t s = 0; s <= range.count; ++s) b.seq_starts[s] = static_cast<int32_t>(s * n);
  for (std::size_t t = 0; t < b.positions.size(); ++t) b.positions[t] = static_cast<int32_t>(t % n);
  if (range.count > 0 && one_byte_table(images, range)) {
    // The bytes the grid covers, row by row; the executor cuts and looks up the patch rows.
    const std::size_t C = static_cast<std::size_t>(g.channels), row_bytes = cols * P * C;
    b.image_rows = rows * P;
    b.image_cols = cols * P;
    b.image_channels = C;
    b.image_patch = P;
    b.byte_values = *images[range.first].byte_values;
    b.image_bytes.resize(range.count * b.image_rows * row_bytes);
    std::uint8_t* dst = b.image_bytes.data();
    for (std::size_t s = 0; s < range.count; ++s) {
      const ImageInput& im = images[range.first + s];
      for (std::size_t y = 0; y < b.image_rows; ++y, dst += row_bytes)
        std::copy_n(im.bytes.data() + y * im.width * C, row_bytes, dst);
    }
    return b;
  }
  b.patches.resize(range.count * n * dim);
  for (std::size_t s = 0; s < range.count; ++s) {
    const ImageInput& im = images[range.first + s];
    // A compact image among others (another table, or f32 images): expanded here.
    std::vector<float> expanded;
    if (im.compact()) expanded = im.pixel_values();
    const float* pixels = im.compact() ? expanded.data() : im.pixels.data();
    const std::size_t H = im.height, W = im.width;
    for (std::size_t gy = 0; gy < rows; ++gy)
      for (std::size_t gx = 0; gx < cols; ++gx) {
        const std::size_t t = s * n + gy * cols + gx;
        float* row = b.patches.data() + t * dim;
        for (std::size_t c = 0; c < im.channels; ++c)
          for (std::size_t ky = 0; ky < P; ++ky) {
            const float* src = pixels + (c * H + gy * P + ky) * W + gx * P;
            std::copy(src, src + P, row + (c * P + ky) * P);
          }
      }
  }
  return b;
}

}  // namespace il::runtime
