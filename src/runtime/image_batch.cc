#include "runtime/image_batch.h"

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

plan::Batch make_image_batch(const std::vector<ImageInput>& images, const BatchRange& range,
                             const models::ImageGeometry& g) {
  const std::size_t n = g.patches(), dim = g.patch_dim(), P = static_cast<std::size_t>(g.patch);
  const std::size_t cols = static_cast<std::size_t>(g.grid_cols()), rows = static_cast<std::size_t>(g.grid_rows());
  plan::Batch b;
  b.patch_dim = dim;
  b.tokens.assign(range.count * n, 0);
  b.positions.resize(range.count * n);
  b.patches.resize(range.count * n * dim);
  b.seq_starts.resize(range.count + 1);
  for (std::size_t s = 0; s <= range.count; ++s) b.seq_starts[s] = static_cast<int32_t>(s * n);
  for (std::size_t s = 0; s < range.count; ++s) {
    const ImageInput& im = images[range.first + s];
    const std::size_t H = im.height, W = im.width;
    for (std::size_t gy = 0; gy < rows; ++gy)
      for (std::size_t gx = 0; gx < cols; ++gx) {
        const std::size_t t = s * n + gy * cols + gx;
        b.positions[t] = static_cast<int32_t>(gy * cols + gx);
        float* row = b.patches.data() + t * dim;
        for (std::size_t c = 0; c < im.channels; ++c)
          for (std::size_t ky = 0; ky < P; ++ky) {
            const float* src = im.pixels.data() + (c * H + gy * P + ky) * W + gx * P;
            std::copy(src, src + P, row + (c * P + ky) * P);
          }
      }
  }
  return b;
}

}  // namespace il::runtime
