// GLM-V image preprocessing (GLM-OCR, GLM-4.1V / 4.6V) as transformers 5.17 runs it: the
// folder's preprocessor_config.json read into a GlmImageConfig, and glm_preprocess() turning a
// decoded RGB image into the processor's pixel_values rows and image_grid_thw.
//
// What transformers does (measured with tools/oracle/make_glm_preprocess_fixtures.py):
//  - AutoImageProcessor goes by image_processor_type ("Glm46VImageProcessor" for GLM-OCR; a
//    folder without it is refused: glm_ocr has no entry of its own in the auto mapping). As for
//    SigLIP, the torchvision class is the default whenever torchvision is installed
//    (Glm46VImageProcessor, Glm4vImageProcessor, whatever "Fast" suffix the file names); the PIL
//    classes (Glm46VImageProcessorPil) only with use_fast=False / backend="pil". Both backends
//    are reproduced (ProcessorBackend); they differ by up to 0.03 after normalisation.
//  - The pixel budget comes from size {shortest_edge: min_pixels, longest_edge: max_pixels};
//    absent, the class default {12544, 11760000}. Top-level "min_pixels" / "max_pixels" are
//    stored on the processor but NOT used for resizing (a 900x600 image with max_pixels 400000
//    still got grid [1, 42, 64]), so we accept and ignore them too.
//  - smart_resize (factor = patch_size * merge_size; the budget counts temporal_patch_size
//    frames), then the resize of the configured backend (bicubic by default), rescale and CLIP
//    normalisation exactly as for SigLIP/CLIP (image/preprocess.h), the still image repeated over
//    the temporal patch, and patches emitted in merge-window order.
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "image/preprocess.h"
#include "image/resize.h"
#include "image/rgb_image.h"

namespace il::image {

struct GlmImageConfig {
  std::string processor_type;  // "Glm46VImageProcessor" or "Glm4vImageProcessor" (suffix dropped)
  ProcessorBackend backend = ProcessorBackend::torchvision;

  bool do_resize = true;
  std::size_t min_pixels = 112 * 112;        // size.shortest_edge
  std::size_t max_pixels = 28 * 28 * 15000;  // size.longest_edge
  ResampleFilter resample = ResampleFilter::bicubic;

  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<double, 3> image_mean{0.48145466, 0.4578275, 0.40821073};
  std::array<double, 3> image_std{0.26862954, 0.26130258, 0.27577711};

  std::size_t patch_size = 14;
  std::size_t temporal_patch_size = 2;
  std::size_t merge_size = 2;

  std::size_t factor() const { return patch_size * merge_size; }
  std::size_t patch_dim() const { return 3 * temporal_patch_size * patch_size * patch_size; }
};

// One image's processor output: grid_t * grid_h * grid_w rows of patch_dim floats (row-major),
// rows in merge-window order (block row, block column, row in window, column in window), each
// row (channel, temporal, py, px).
struct PatchedImage {
  std::vector<float> rows;
  std::size_t patch_dim = 0;
  std::array<int, 3> grid_thw{0, 0, 0};

  std::size_t num_patches() const { return patch_dim ? rows.size() / patch_dim : 0; }
  // <|image|> tokens the prompt gets for it: t * h * w / merge².
  std::size_t num_merged_tokens(std::size_t merge_size) const {
    return num_patches() / (merge_size * merge_size);
  }
};

// True for the processor types this file handles ("Glm46VImageProcessor", "Glm4vImageProcessor"
// and their "Fast" / "Pil" forms).
bool is_glm_image_processor_type(std::string_view type);
// True when a parsed preprocessor_config.json names one of those types: which of
// read_glm_image_config and read_preprocessor_config (SigLIP/CLIP) a folder's file is for.
bool is_glm_preprocessor_config(const nlohmann::json& json);

// Reads preprocessor_config.json. Errors (il::Error) name the file and the field: another
// processor type, a field that would change the output and is not implemented, a size without
// both shortest_edge and longest_edge, min above max, patch sizes out of range.
GlmImageConfig read_glm_image_config(const std::filesystem::path& file);
GlmImageConfig parse_glm_image_config(const nlohmann::json& json, const std::string& source);

// transformers' smart_resize for one still image of `height` x `width`: the (height, width) it
// is resized to, multiples of config.factor(). Throws il::Error naming the input for an aspect
// ratio above 200 (after the upscale of sides below the factor), an empty image, or a result
// too large to allocate.
std::pair<std::size_t, std::size_t> glm_smart_resize(std::size_t height, std::size_t width,
                                                     const GlmImageConfig& config);

// The processor's pixel_values and image_grid_thw for one image, bit-exact with the configured
// backend.
PatchedImage glm_preprocess(const RgbImage& image, const GlmImageConfig& config);

}  // namespace il::image
