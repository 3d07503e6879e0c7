// Readers of the fields every image processor's preprocessor_config.json shares (image/
// preprocess.cc for SigLIP / CLIP, image/glm_preprocess.cc for GLM-V): errors name the file and
// the field, and show the value (shortened, always printable).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace il::image::detail {

// A field's value as an error message shows it.
std::string shown(const nlohmann::json& v);
// true / false; `fallback` when absent or null.
bool bool_field(const nlohmann::json& obj, const char* key, bool fallback, const std::string& source);
// One finite number for every channel, or a list of 3 (image_mean, image_std); `fallback` when
// absent or null.
std::array<double, 3> per_channel_field(const nlohmann::json& obj, const char* key, std::array<double, 3> fallback,
                                        const std::string& source);
// A processor class name without its backend suffix ("SiglipImageProcessorFast" → "SiglipImageProcessor";
// "...Pil" likewise): transformers 5 picks the backend itself, whatever the file names.
std::string_view without_backend_suffix(std::string_view type);

}  // namespace il::image::detail
