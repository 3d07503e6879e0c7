#include "image/preprocess.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

#include "core/error.h"
#include "image/glm_preprocess.h"
#include "image/processor_fields.h"
#include "io/json_util.h"

namespace il::image {
namespace {

using nlohmann::json;
using detail::shown;

// Far above any fixed-resolution tower's input (SigLIP so400m: 384), low enough that a hostile
// file cannot ask for an enormous allocation.
constexpr long long kMaxSide = 8192;

std::size_t positive_side(const json& v, const std::string& source, const std::string& field) {
  check(v.is_number_integer() && v.get<long long>() > 0 && v.get<long long>() <= kMaxSide, source, ": ", field,
        " must be an integer from 1 to ", kMaxSide, " (got ", shown(v), ")");
  return static_cast<std::size_t>(v.get<long long>());
}

struct TypeDefaults {
  std::string name;
  bool center_crop;
  std::size_t shortest_edge;  // 0: size {height, width} below
  std::size_t height, width;
  std::array<double, 3> mean, std;
};

// The class attributes of transformers 5.17's SiglipImageProcessor and CLIPImageProcessor: what
// a field absent from the file means.
std::optional<TypeDefaults> defaults_for(std::string_view type) {
  type = detail::without_backend_suffix(type);
  if (type == "SiglipImageProcessor") {
    return TypeDefaults{"SiglipImageProcessor", false, 0, 224, 224, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
  }
  if (type == "CLIPImageProcessor" || type == "CLIPFeatureExtractor") {
    return TypeDefaults{"CLIPImageProcessor", true, 224, 224, 224,
                        {0.48145466, 0.4578275, 0.40821073}, {0.26862954, 0.26130258, 0.27577711}};
  }
  return std::nullopt;
}

// Fields that do not change pixel_values (or are ignored by transformers 5.17 when read from the
// file, like use_fast: the backend is chosen by the caller, see preprocess.h).
const std::set<std::string, std::less<>> kInert = {
    "image_processor_type", "feature_extractor_type", "processor_class", "use_fast", "do_convert_rgb",
    "data_format", "input_data_format", "return_tensors", "device", "disable_grouping",
    "image_seq_length", "model_input_names"};

// Fields we read.
const std::set<std::string, std::less<>> kUsed = {
    "do_resize", "size", "resample", "do_center_crop", "crop_size", "do_rescale", "rescale_factor",
    "do_normalize", "image_mean", "image_std"};

// Fields that would change the output and are accepted only at their no-op value.
bool is_noop(std::string_view key, const json& v) {
  if (v.is_null()) return true;
  if (key == "do_pad" || key == "do_flip_channel_order" || key == "do_reduce_labels") return v == false;
  return false;
}

}  // namespace

PreprocessorConfig parse_preprocessor_config(const json& j, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  std::string type;
  for (const char* key : {"image_processor_type", "feature_extractor_type"}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) {
      check(it->is_string(), source, ": ", key, " must be a string (got ", shown(*it), ")");
      type = it->get<std::string>();
      break;
    }
  }
  check(!type.empty(), source,
        ": no image_processor_type (or feature_extractor_type): cannot tell which image processor it describes");
  check(!j.contains("auto_map"), source, ": auto_map (a processor in remote code) is not supported");
  const auto defaults = defaults_for(type);
  // A GLM-V folder's file is valid, but its pixel_values are patch rows with a dynamic size:
  // image/glm_preprocess.h reads it (read_glm_image_config).
  check(!is_glm_image_processor_type(type), source, ": image_processor_type \"", type,
        "\" is a GLM-V processor (dynamic resolution, patch rows): read it with read_glm_image_config");
  check(defaults.has_value(), source, ": image_processor_type \"", type,
        "\" is not supported (supported: SiglipImageProcessor, CLIPImageProcessor and their Fast/Pil forms; "
        "Glm46VImageProcessor / Glm4vImageProcessor through read_glm_image_config)");
  for (const auto& [key, value] : j.items()) {
    if (kInert.count(key) || kUsed.count(key) || is_noop(key, value)) continue;
    throw make_error(source, ": field \"", key, "\" = ", shown(value), " is not supported by ", type);
  }
  if (auto it = j.find("do_convert_rgb"); it != j.end() && !it->is_null()) {
    check(it->is_boolean(), source, ": do_convert_rgb must be true or false (got ", shown(*it), ")");
  }

  PreprocessorConfig c;
  c.processor_type = defaults->name;
  c.do_resize = detail::bool_field(j, "do_resize", true, source);
  c.resize_height = defaults->height;
  c.resize_width = defaults->width;
  c.shortest_edge = defaults->shortest_edge;
  if (c.shortest_edge) c.resize_height = c.resize_width = 0;
  if (auto it = j.find("size"); it != j.end() && !it->is_null()) {
    c.resize_height = c.resize_width = c.shortest_edge = 0;
    if (it->is_number_integer()) {
      // get_size_dict(int, default_to_square=False): both classes treat it as the shortest edge
      c.shortest_edge = positive_side(*it, source, "size");
    } else {
      check(it->is_object(), source, ": size must be an integer or an object (got ", shown(*it), ")");
      for (const auto& [key, value] : it->items()) {
        if (value.is_null()) continue;
        if (key == "height") {
          c.resize_height = positive_side(value, source, "size.height");
        } else if (key == "width") {
          c.resize_width = positive_side(value, source, "size.width");
        } else if (key == "shortest_edge") {
          c.shortest_edge = positive_side(value, source, "size.shortest_edge");
        } else {
          throw make_error(source, ": size.", key, " is not supported (supported: {height, width} or {shortest_edge})");
        }
      }
      const bool hw = c.resize_height && c.resize_width;
      check(hw != (c.shortest_edge != 0) && (hw || (!c.resize_height && !c.resize_width)), source,
            ": size must hold height and width, or shortest_edge alone (got ", shown(*it), ")");
    }
  }
  if (auto it = j.find("resample"); it != j.end() && !it->is_null()) {
    const auto filter = it->is_number_integer() ? filter_from_pil_code(it->get<long long>()) : std::nullopt;
    check(filter.has_value(), source, ": resample must be a PIL filter number 0-5 (got ", shown(*it), ")");
    c.resample = *filter;
  }
  c.do_center_crop = detail::bool_field(j, "do_center_crop", defaults->center_crop, source);
  c.crop_height = c.crop_width = defaults->center_crop ? 224 : 0;
  if (auto it = j.find("crop_size"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer()) {  // get_size_dict(int, default_to_square=True)
      c.crop_height = c.crop_width = positive_side(*it, source, "crop_size");
    } else {
      check(it->is_object() && it->contains("height") && it->contains("width") && it->size() == 2, source,
            ": crop_size must be an integer or {height, width} (got ", shown(*it), ")");
      c.crop_height = positive_side((*it)["height"], source, "crop_size.height");
      c.crop_width = positive_side((*it)["width"], source, "crop_size.width");
    }
  }
  check(!c.do_center_crop || (c.crop_height && c.crop_width), source, ": do_center_crop is set but crop_size is not");
  c.do_rescale = detail::bool_field(j, "do_rescale", true, source);
  if (auto it = j.find("rescale_factor"); it != j.end() && !it->is_null()) {
    check(it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() > 0, source,
          ": rescale_factor must be a positive number (got ", shown(*it), ")");
    c.rescale_factor = it->get<double>();
  }
  c.do_normalize = detail::bool_field(j, "do_normalize", true, source);
  c.image_mean = detail::per_channel_field(j, "image_mean", defaults->mean, source);
  c.image_std = detail::per_channel_field(j, "image_std", defaults->std, source);
  for (std::size_t i = 0; i < 3; ++i) {
    check(c.image_std[i] != 0.0, source, ": image_std[", i, "] is zero");
  }
  return c;
}

PreprocessorConfig read_preprocessor_config(const std::filesystem::path& file) {
  return parse_preprocessor_config(io::read_json_file(file), file.string());
}

namespace {

std::pair<std::size_t, std::size_t> resized_size(const RgbImage& image, const PreprocessorConfig& c) {
  if (!c.shortest_edge) return {c.resize_width, c.resize_height};
  // transformers' get_resize_output_image_size(default_to_square=False): int() of a double
  // quotient, as Python evaluates size * long / short.
  const std::size_t w = image.width, h = image.height;
  const std::size_t short_side = std::min(w, h), long_side = std::max(w, h);
  const auto new_long = static_cast<std::size_t>(static_cast<double>(c.shortest_edge * long_side) /
                                                 static_cast<double>(short_side));
  return w <= h ? std::pair{c.shortest_edge, new_long} : std::pair{new_long, c.shortest_edge};
}

// Copies the window [top, top+ch) × [left, left+cw) of `image` placed at (pad_top, pad_left) on a
// zero canvas: the crop with zero padding both backends do when the crop exceeds the image.
RgbImage crop_with_padding(const RgbImage& image, long long top, long long left, std::size_t ch, std::size_t cw) {
  RgbImage out{cw, ch, std::vector<std::uint8_t>(cw * ch * 3, 0)};
  for (std::size_t y = 0; y < ch; ++y) {
    const long long sy = top + static_cast<long long>(y);
    if (sy < 0 || sy >= static_cast<long long>(image.height)) continue;
    for (std::size_t x = 0; x < cw; ++x) {
      const long long sx = left + static_cast<long long>(x);
      if (sx < 0 || sx >= static_cast<long long>(image.width)) continue;
      const std::uint8_t* p = image.at(static_cast<std::size_t>(sx), static_cast<std::size_t>(sy));
      std::copy(p, p + 3, out.pixels.data() + (y * cw + x) * 3);
    }
  }
  return out;
}

long long floor_div2(long long v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
long long ceil_div2(long long v) { return v >= 0 ? (v + 1) / 2 : -((-v) / 2); }

RgbImage center_crop(const RgbImage& image, const PreprocessorConfig& c) {
  const long long h = static_cast<long long>(image.height), w = static_cast<long long>(image.width);
  const long long ch = static_cast<long long>(c.crop_height), cw = static_cast<long long>(c.crop_width);
  if (ch == h && cw == w) return image;
  long long top = 0, left = 0;
  if (c.backend == ProcessorBackend::torchvision) {
    // TorchvisionBackend.center_crop: pad (crop - size) // 2 before when the crop is larger,
    // then crop at int((size - crop) / 2.0) of the padded image.
    const long long pad_top = ch > h ? (ch - h) / 2 : 0, pad_left = cw > w ? (cw - w) / 2 : 0;
    const long long ph = ch > h ? h + (ch - h) / 2 + (ch - h + 1) / 2 : h;
    const long long pw = cw > w ? w + (cw - w) / 2 + (cw - w + 1) / 2 : w;
    top = (ph - ch) / 2 - pad_top;
    left = (pw - cw) / 2 - pad_left;
  } else {
    // image_transforms.center_crop: (size - crop) // 2, and when that leaves the image, a zero
    // canvas with the image at ceil((new - size) / 2).
    top = floor_div2(h - ch);
    left = floor_div2(w - cw);
    if (top < 0 || left < 0 || top + ch > h || left + cw > w) {
      const long long nh = std::max(ch, h), nw = std::max(cw, w);
      const long long pad_top = ceil_div2(nh - h), pad_left = ceil_div2(nw - w);
      // in canvas coordinates the window starts at top + pad_top, clipped to the canvas
      const long long ct = std::max(0LL, top + pad_top), cl = std::max(0LL, left + pad_left);
      top = ct - pad_top;
      left = cl - pad_left;
    }
  }
  return crop_with_padding(image, top, left, c.crop_height, c.crop_width);
}

}  // namespace

RgbImage resize_and_crop(const RgbImage& image, const PreprocessorConfig& c) {
  check(image.width > 0 && image.height > 0 && image.pixels.size() == image.width * image.height * 3,
        "preprocess: the image is empty or its pixel buffer does not match ", image.width, "x", image.height);
  RgbImage out = image;
  if (c.do_resize) {
    const auto [w, h] = resized_size(image, c);
    check(w > 0 && h > 0 && w <= static_cast<std::size_t>(kMaxSide) * 64 && h <= static_cast<std::size_t>(kMaxSide) * 64,
          "preprocess: a ", image.width, "x", image.height, " image would be resized to ", w, "x", h);
    if (c.backend == ProcessorBackend::torchvision) {
      ResampleFilter f = c.resample;
      // TorchvisionBackend.resize: LANCZOS is not available for tensors; transformers warns and
      // uses BICUBIC.
      if (f == ResampleFilter::lanczos) f = ResampleFilter::bicubic;
      check(f == ResampleFilter::bilinear || f == ResampleFilter::bicubic, "preprocess: resample ",
            filter_name(c.resample), " is not supported with the torchvision backend (bilinear, bicubic, lanczos)");
      out = resize_torch_uint8(image, w, h, f);
    } else {
      out = resize_pillow(image, w, h, c.resample);
    }
  }
  if (c.do_center_crop) out = center_crop(out, c);
  return out;
}

std::vector<float> byte_value_table(const PreprocessorConfig& c) {
  // Per channel, the float arithmetic of the backend, operation by operation in float32, on each
  // of the 256 bytes a resized uint8 channel can hold (a pixel value depends on nothing else):
  //  torchvision: mean and std divided by the rescale factor (as float32 tensors times
  //    float32(1 / factor)), then (x - mean') / std'; rescale alone: x * float32(factor).
  //  pil: numpy's rescale (double product rounded to float32), then (v - mean) / std in float32.
  std::vector<float> table(3 * 256);
  for (std::size_t ch = 0; ch < 3; ++ch) {
    float* dst = table.data() + ch * 256;
    const float mean32 = static_cast<float>(c.image_mean[ch]);
    const float std32 = static_cast<float>(c.image_std[ch]);
    if (c.backend == ProcessorBackend::torchvision) {
      const float inv_factor = static_cast<float>(1.0 / c.rescale_factor);
      const float mean = c.do_rescale ? mean32 * inv_factor : mean32;
      const float stdv = c.do_rescale ? std32 * inv_factor : std32;
      const float factor = static_cast<float>(c.rescale_factor);
      for (int b = 0; b < 256; ++b) {
        const float x = static_cast<float>(b);
        if (c.do_normalize) {
          dst[b] = (x - mean) / stdv;
        } else if (c.do_rescale) {
          dst[b] = x * factor;
        } else {
          dst[b] = x;
        }
      }
    } else {
      for (int b = 0; b < 256; ++b) {
        float v = c.do_rescale ? static_cast<float>(static_cast<double>(b) * c.rescale_factor) : static_cast<float>(b);
        if (c.do_normalize) v = (v - mean32) / std32;
        dst[b] = v;
      }
    }
  }
  return table;
}

ImageInput preprocess_compact(const RgbImage& image, const PreprocessorConfig& c,
                              std::shared_ptr<const std::vector<float>> byte_values) {
  if (!byte_values) byte_values = std::make_shared<const std::vector<float>>(byte_value_table(c));
  check(byte_values->size() == 3 * 256, "preprocess: a byte value table of ", byte_values->size(),
        " values (3 channels × 256 wanted)");
  RgbImage r = resize_and_crop(image, c);
  ImageInput in;
  in.channels = 3;
  in.height = r.height;
  in.width = r.width;
  in.bytes = std::move(r.pixels);
  in.byte_values = std::move(byte_values);
  return in;
}

ImageInput preprocess(const RgbImage& image, const PreprocessorConfig& c) {
  ImageInput in = preprocess_compact(image, c);
  in.pixels = in.pixel_values();
  in.bytes.clear();
  in.byte_values.reset();
  return in;
}

}  // namespace il::image
