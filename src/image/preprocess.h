// A folder's image preprocessing as transformers 5.17 runs it: preprocessor_config.json read into
// a PreprocessorConfig, and preprocess() turning a decoded RGB image into the pixel_values one
// image gets (resize, center crop, rescale, normalise, channels first).
//
// Which implementation is "transformers' processor": in transformers 5, AutoImageProcessor and
// AutoProcessor instantiate the torchvision backend (SiglipImageProcessor, CLIPImageProcessor
// derive from TorchvisionBackend) whenever torchvision is installed, whatever the file's
// image_processor_type says ("...Fast", "...Pil" or neither) and whatever its "use_fast" says;
// the PIL backend (SiglipImageProcessorPil, ...) is used only when the caller passes
// use_fast=False / backend="pil" or torchvision is missing. That is our default too
// (ProcessorBackend::torchvision); ProcessorBackend::pil reproduces the PIL classes. The two differ
// by up to 2 in a resized uint8 channel (about 0.016 after SigLIP's normalisation, 0.03 after
// CLIP's). tools/oracle/make_preprocess_fixtures.py records all of this.
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "image/resize.h"
#include "image/rgb_image.h"
#include "inferencelayer/types.h"

namespace il::image {

enum class ProcessorBackend {
  torchvision,  // transformers' default: torchvision's uint8 resize, rescale fused into normalise
  pil,          // the *Pil classes: Pillow's resize, numpy's rescale then normalise
};

struct PreprocessorConfig {
  std::string processor_type;  // "SiglipImageProcessor" or "CLIPImageProcessor" (suffix dropped)
  ProcessorBackend backend = ProcessorBackend::torchvision;

  bool do_resize = true;
  // Either both of resize_height / resize_width (size {height, width}) or shortest_edge
  // (size {shortest_edge} or a plain int): the shorter side becomes shortest_edge, the longer
  // int(shortest_edge * long / short).
  std::size_t resize_height = 0;
  std::size_t resize_width = 0;
  std::size_t shortest_edge = 0;
  ResampleFilter resample = ResampleFilter::bicubic;

  bool do_center_crop = false;
  std::size_t crop_height = 0;
  std::size_t crop_width = 0;

  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<double, 3> image_mean{0.5, 0.5, 0.5};
  std::array<double, 3> image_std{0.5, 0.5, 0.5};
};

// Reads preprocessor_config.json. Errors (il::Error) name the file and the field: a processor
// type other than SigLIP's or CLIP's, a field that would change the output and is not
// implemented (padding, longest_edge sizes, ...), a value of the wrong type or range.
PreprocessorConfig read_preprocessor_config(const std::filesystem::path& file);
// The same from parsed JSON; `source` names it in messages.
PreprocessorConfig parse_preprocessor_config(const nlohmann::json& json, const std::string& source);

// The resized and center-cropped uint8 image, before rescaling (what the processor gives with
// do_rescale=False, do_normalize=False).
RgbImage resize_and_crop(const RgbImage& image, const PreprocessorConfig& config);

// One image's pixel_values (3 × H × W floats), bit-exact with the configured backend.
ImageInput preprocess(const RgbImage& image, const PreprocessorConfig& config);

// The value of each byte of a resized channel after the backend's rescale and normalise, as
// preprocess computes it: table[c · 256 + byte], 3 × 256 floats.
std::vector<float> byte_value_table(const PreprocessorConfig& config);

// The same image in ImageInput's compact form: the resized and cropped uint8 image and the
// byte value table (`byte_values`, made from `config` when null; pass one table to share it
// between images). pixel_values() of the result is preprocess()'s pixels, bit for bit.
ImageInput preprocess_compact(const RgbImage& image, const PreprocessorConfig& config,
                              std::shared_ptr<const std::vector<float>> byte_values = nullptr);

}  // namespace il::image
