// Images into ragged batches of patch tokens (models::ImageGeometry): each image one sequence
// of grid_rows × grid_cols patch tokens, in the order transformers' Conv2d + flatten(2) +
// transpose(1, 2) gives them (patch index = row · grid_cols + col), each token's patch row
// C·P·P values in the convolution weight's (c, ky, kx) order (plan::Batch::patches).
#pragma once

#include <cstddef>
#include <vector>

#include "inferencelayer/types.h"
#include "models/model.h"
#include "plan/plan.h"
#include "runtime/batching.h"

namespace il::runtime {

// Throws il::Error naming the image index: channels, height or width other than the model's,
// a pixel count other than their product, a value that is not finite.
void validate_images(const std::vector<ImageInput>& images, const models::ImageGeometry& g);

// Consecutive ranges of images whose patch tokens fit max_tokens (at least one image each).
std::vector<BatchRange> pack_images(std::size_t count, std::size_t tokens_per_image, std::size_t max_tokens);

// The batch of images [range.first, range.first + range.count): patch rows, positions 0 .. n − 1
// per image, one (unused) token id 0 per patch. When every image is compact with one byte value
// table (what Engine::load_image gives), the rows go as bytes (plan::Batch::image_bytes, the
// pixels the grid covers) for the executor to cut; otherwise as f32 patch rows (compact images
// expanded), the same values either way.
plan::Batch make_image_batch(const std::vector<ImageInput>& images, const BatchRange& range,
                             const models::ImageGeometry& g);

}  // namespace il::runtime
