#include "image/glm_preprocess.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <set>
#include <tuple>

#include "core/error.h"
#include "image/processor_fields.h"
#include "io/json_util.h"

namespace il::image {
namespace {

using nlohmann::json;
using detail::shown;

// Upper bounds that keep a hostile file from asking for enormous allocations: the largest budget
// any GLM-V release uses is 71372800 (the GLM-OCR SDK's max_pixels); allow 4x that.
constexpr long long kMaxPixelsLimit = 4LL * 71372800;
// After smart_resize an image has at most max(max_pixels, upscaled-to-min_pixels) pixels per
// frame; refuse anything above this many per frame.
constexpr std::size_t kMaxResizedPixels = static_cast<std::size_t>(kMaxPixelsLimit);

std::size_t int_field(const json& obj, const char* key, std::size_t fallback, long long lo, long long hi,
                      const std::string& source) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  check(it->is_number_integer() && it->get<long long>() >= lo && it->get<long long>() <= hi, source, ": ", key,
        " must be an integer from ", lo, " to ", hi, " (got ", shown(*it), ")");
  return static_cast<std::size_t>(it->get<long long>());
}

// Fields that do not change pixel_values. min_pixels / max_pixels at the top level are stored by
// transformers 5.17 but not used for resizing (see glm_preprocess.h).
const std::set<std::string, std::less<>> kInert = {
    "image_processor_type", "processor_class", "use_fast", "do_convert_rgb", "data_format", "input_data_format",
    "return_tensors", "device", "disable_grouping", "model_input_names", "min_pixels", "max_pixels",
    "default_to_square", "backend"};

const std::set<std::string, std::less<>> kUsed = {
    "do_resize", "size", "resample", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std",
    "patch_size", "temporal_patch_size", "merge_size"};

bool is_noop(std::string_view key, const json& v) {
  if (v.is_null()) return true;
  if (key == "do_pad" || key == "do_center_crop") return v == false;
  return false;
}

// Python's round() of a float: ties to even, as nearbyint does in the default rounding mode.
long long py_round(double v) {
  const int old = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(v);
  std::fesetround(old);
  return static_cast<long long>(r);
}

}  // namespace

bool is_glm_image_processor_type(std::string_view type) {
  type = detail::without_backend_suffix(type);
  return type == "Glm46VImageProcessor" || type == "Glm4vImageProcessor";
}

bool is_glm_preprocessor_config(const json& j) {
  if (!j.is_object()) return false;
  auto it = j.find("image_processor_type");
  return it != j.end() && it->is_string() && is_glm_image_processor_type(it->get<std::string>());
}

GlmImageConfig parse_glm_image_config(const json& j, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  auto type_it = j.find("image_processor_type");
  check(type_it != j.end() && type_it->is_string(), source,
        ": no image_processor_type: cannot tell which image processor it describes (transformers refuses such a "
        "GLM-V folder too)");
  const std::string type = type_it->get<std::string>();
  check(is_glm_image_processor_type(type), source, ": image_processor_type \"", type,
        "\" is not a GLM-V processor (supported: Glm46VImageProcessor, Glm4vImageProcessor and their Fast/Pil forms)");
  check(!j.contains("auto_map"), source, ": auto_map (a processor in remote code) is not supported");
  for (const auto& [key, value] : j.items()) {
    if (kInert.count(key) || kUsed.count(key) || is_noop(key, value)) continue;
    throw make_error(source, ": field \"", key, "\" = ", shown(value), " is not supported by ", type);
  }
  if (auto it = j.find("do_convert_rgb"); it != j.end() && !it->is_null()) {
    check(it->is_boolean(), source, ": do_convert_rgb must be true or false (got ", shown(*it), ")");
  }

  GlmImageConfig c;
  c.processor_type = std::string(detail::without_backend_suffix(type));
  c.do_resize = detail::bool_field(j, "do_resize", true, source);
  if (auto it = j.find("size"); it != j.end() && !it->is_null()) {
    // Glm46VImageProcessor refuses a size without both keys; other keys (height, width, ...) are
    // not read by its resize, so a file carrying them means something we would not reproduce.
    check(it->is_object(), source, ": size must be an object {shortest_edge, longest_edge} (got ", shown(*it), ")");
    for (const auto& [key, value] : it->items()) {
      if (value.is_null()) continue;
      check(key == "shortest_edge" || key == "longest_edge", source, ": size.", key,
            " is not supported (GLM-V sizes are {shortest_edge: min_pixels, longest_edge: max_pixels})");
    }
    check(it->contains("shortest_edge") && it->contains("longest_edge"), source,
          ": size must hold both shortest_edge (min_pixels) and longest_edge (max_pixels), as transformers requires "
          "(got ",
          shown(*it), ")");
    c.min_pixels = int_field(*it, "shortest_edge", 0, 1, kMaxPixelsLimit, source + " size");
    c.max_pixels = int_field(*it, "longest_edge", 0, 1, kMaxPixelsLimit, source + " size");
  }
  check(c.min_pixels <= c.max_pixels, source, ": size.shortest_edge (min_pixels ", c.min_pixels,
        ") is above size.longest_edge (max_pixels ", c.max_pixels, ")");
  if (auto it = j.find("resample"); it != j.end() && !it->is_null()) {
    const auto filter = it->is_number_integer() ? filter_from_pil_code(it->get<long long>()) : std::nullopt;
    check(filter.has_value(), source, ": resample must be a PIL filter number 0-5 (got ", shown(*it), ")");
    c.resample = *filter;
  }
  c.do_rescale = detail::bool_field(j, "do_rescale", true, source);
  if (auto it = j.find("rescale_factor"); it != j.end() && !it->is_null()) {
    check(it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() > 0, source,
          ": rescale_factor must be a positive number (got ", shown(*it), ")");
    c.rescale_factor = it->get<double>();
  }
  c.do_normalize = detail::bool_field(j, "do_normalize", true, source);
  c.image_mean = detail::per_channel_field(j, "image_mean", c.image_mean, source);
  c.image_std = detail::per_channel_field(j, "image_std", c.image_std, source);
  for (std::size_t i = 0; i < 3; ++i) {
    check(c.image_std[i] != 0.0, source, ": image_std[", i, "] is zero");
  }
  c.patch_size = int_field(j, "patch_size", 14, 1, 64, source);
  c.temporal_patch_size = int_field(j, "temporal_patch_size", 2, 1, 16, source);
  c.merge_size = int_field(j, "merge_size", 2, 1, 8, source);
  return c;
}

GlmImageConfig read_glm_image_config(const std::filesystem::path& file) {
  return parse_glm_image_config(io::read_json_file(file), file.string());
}

std::pair<std::size_t, std::size_t> glm_smart_resize(std::size_t height, std::size_t width,
                                                     const GlmImageConfig& config) {
  check(height > 0 && width > 0, "GLM-V preprocessing: the image is empty (", width, "x", height, ")");
  const long long factor = static_cast<long long>(config.factor());
  // A still image is temporal_patch_size identical frames: both num_frames and temporal_factor.
  const long long frames = static_cast<long long>(config.temporal_patch_size);
  long long h = static_cast<long long>(height), w = static_cast<long long>(width);
  if (h < factor || w < factor) {
    // Python: scale = max(factor / h, factor / w); int(h * scale) truncates.
    const double scale = std::max(static_cast<double>(factor) / static_cast<double>(h),
                                  static_cast<double>(factor) / static_cast<double>(w));
    h = static_cast<long long>(static_cast<double>(h) * scale);
    w = static_cast<long long>(static_cast<double>(w) * scale);
  }
  const double aspect = static_cast<double>(std::max(h, w)) / static_cast<double>(std::min(h, w));
  check(std::min(h, w) > 0 && aspect <= 200.0, "GLM-V preprocessing: a ", width, "x", height,
        " image has an aspect ratio of ", aspect,
        " (after sides below ", factor, " px are scaled up); the processor refuses ratios above 200");
  const double fd = static_cast<double>(factor);
  long long h_bar = py_round(static_cast<double>(h) / fd) * factor;
  long long w_bar = py_round(static_cast<double>(w) / fd) * factor;
  const long long t_bar = py_round(static_cast<double>(frames) / static_cast<double>(frames)) * frames;
  const double hw_frames = static_cast<double>(frames * h * w);  // exact: far below 2^53
  const long long max_pixels = static_cast<long long>(config.max_pixels);
  const long long min_pixels = static_cast<long long>(config.min_pixels);
  if (t_bar * h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(hw_frames / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<long long>(std::floor(static_cast<double>(h) / beta / fd)) * factor);
    w_bar = std::max(factor, static_cast<long long>(std::floor(static_cast<double>(w) / beta / fd)) * factor);
  } else if (t_bar * h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / hw_frames);
    h_bar = static_cast<long long>(std::ceil(static_cast<double>(h) * beta / fd)) * factor;
    w_bar = static_cast<long long>(std::ceil(static_cast<double>(w) * beta / fd)) * factor;
  }
  const auto resized_pixels = static_cast<std::size_t>(h_bar) * static_cast<std::size_t>(w_bar);
  check(h_bar > 0 && w_bar > 0 && resized_pixels <= kMaxResizedPixels,
        "GLM-V preprocessing: a ", width, "x", height, " image would be resized to ", w_bar, "x", h_bar,
        " (min_pixels ", config.min_pixels, ", max_pixels ", config.max_pixels, "), more than ", kMaxResizedPixels,
        " pixels");
  return {static_cast<std::size_t>(h_bar), static_cast<std::size_t>(w_bar)};
}

PatchedImage glm_preprocess(const RgbImage& image, const GlmImageConfig& config) {
  check(image.width > 0 && image.height > 0 && image.pixels.size() == image.width * image.height * 3,
        "GLM-V preprocessing: the image is empty or its pixel buffer does not match ", image.width, "x", image.height);
  std::size_t out_h = image.height, out_w = image.width;
  if (config.do_resize) {
    std::tie(out_h, out_w) = glm_smart_resize(image.height, image.width, config);
  } else {
    check(out_h % config.factor() == 0 && out_w % config.factor() == 0,
          "GLM-V preprocessing: do_resize is false and the ", image.width, "x", image.height,
          " image is not a multiple of ", config.factor(), " px on both sides");
  }
  // Resize, rescale and normalise are those of the SigLIP/CLIP processors (same backend code in
  // transformers): reuse them through an equivalent fixed-size PreprocessorConfig.
  PreprocessorConfig plain;
  plain.processor_type = config.processor_type;
  plain.backend = config.backend;
  plain.do_resize = config.do_resize;
  plain.resize_height = out_h;
  plain.resize_width = out_w;
  plain.resample = config.resample;
  plain.do_center_crop = false;
  plain.do_rescale = config.do_rescale;
  plain.rescale_factor = config.rescale_factor;
  plain.do_normalize = config.do_normalize;
  plain.image_mean = config.image_mean;
  plain.image_std = config.image_std;
  const ImageInput chw = preprocess(image, plain);
  check(chw.channels == 3 && chw.height == out_h && chw.width == out_w, "GLM-V preprocessing: resized to ",
        chw.width, "x", chw.height, ", expected ", out_w, "x", out_h);

  const std::size_t p = config.patch_size, m = config.merge_size, t = config.temporal_patch_size;
  const std::size_t gh = out_h / p, gw = out_w / p;
  PatchedImage out;
  out.patch_dim = config.patch_dim();
  out.grid_thw = {1, static_cast<int>(gh), static_cast<int>(gw)};
  out.rows.resize(gh * gw * out.patch_dim);
  const std::size_t plane = out_h * out_w;
  float* dst = out.rows.data();
  for (std::size_t bh = 0; bh < gh / m; ++bh) {
    for (std::size_t bw = 0; bw < gw / m; ++bw) {
      for (std::size_t mh = 0; mh < m; ++mh) {
        for (std::size_t mw = 0; mw < m; ++mw) {
          const std::size_t y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (std::size_t c = 0; c < 3; ++c) {
            for (std::size_t frame = 0; frame < t; ++frame) {  // the still image, repeated
              for (std::size_t py = 0; py < p; ++py) {
                const float* src = chw.pixels.data() + c * plane + (y0 + py) * out_w + x0;
                dst = std::copy(src, src + p, dst);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace il::image
