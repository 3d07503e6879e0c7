// Resizing an 8-bit RGB image bit-exactly as the two libraries behind transformers' image
// processors do:
//  - Pillow's Image.resize (libImaging/Resample.c): separable convolution, the filter's support
//    widened by the downscale factor (antialiasing), coefficients in double rounded to 22-bit
//    fixed point, a horizontal pass then a vertical one with a uint8 image in between. NEAREST
//    goes through Pillow's affine nearest-neighbour path instead.
//  - torchvision's resize of a uint8 tensor with antialias=True on the CPU (PyTorch's
//    _upsample_{bilinear,bicubic}2d_aa uint8 kernels): the same bounds and double weights (but
//    its own form of the cubic polynomial), rounded to int16 with a precision chosen per pass
//    from the largest weight, so it can differ from Pillow by 1-2 per channel.
// The default processors of transformers 5 (SiglipImageProcessor, CLIPImageProcessor: the
// TorchvisionBackend) use the second; the *Pil classes the first.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "image/rgb_image.h"

namespace il::image {

enum class ResampleFilter { nearest, box, bilinear, hamming, bicubic, lanczos };

// PIL.Image.Resampling's numbers as preprocessor_config.json's "resample" stores them:
// 0 NEAREST, 1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING. nullopt for anything else.
std::optional<ResampleFilter> filter_from_pil_code(long long code);
std::string_view filter_name(ResampleFilter filter);

// Pillow's Image.resize((width, height), filter) with the default box and reducing_gap=None.
// Every filter. An image already of that size is returned unchanged (Pillow copies it).
RgbImage resize_pillow(const RgbImage& image, std::size_t width, std::size_t height, ResampleFilter filter);

// torchvision.transforms.v2.functional.resize(uint8 tensor, [height, width], filter,
// antialias=True) on the CPU. Bilinear and bicubic only (what the uint8 kernels cover); other
// filters throw il::Error. Same size: returned unchanged, as torchvision does.
RgbImage resize_torch_uint8(const RgbImage& image, std::size_t width, std::size_t height, ResampleFilter filter);

// torch.nn.functional.interpolate(x, size, mode="bilinear" | "bicubic", align_corners=False,
// antialias=True) of a float tensor: the taps of resize_torch_uint8, unrounded, the width pass
// first (as ATen's separable kernel). Here `in` is height × width × channels (channels
// innermost: a position table of grid rows), and so is the result. Resizing a learned position
// table to another grid (SAM's, CLIP's) is what it is for. Same size: a copy.
std::vector<float> resize_float_aa(const float* in, std::size_t in_h, std::size_t in_w, std::size_t channels,
                                   std::size_t out_h, std::size_t out_w, ResampleFilter filter);

// interpolate(x, size, mode="linear", align_corners=False) along the rows of a [rows, channels]
// table (no antialiasing, as the default): row o reads rows ⌊s⌋ and ⌊s⌋ + 1 of the input at
// s = max((o + 0.5) · rows / out_rows − 0.5, 0). SAM's relative position tables resized to
// 2 · grid − 1 rows.
std::vector<float> resize_rows_linear(const float* in, std::size_t rows, std::size_t channels, std::size_t out_rows);

}  // namespace il::image
