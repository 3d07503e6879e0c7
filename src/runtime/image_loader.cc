#include "runtime/image_loader.h"

#include <span>

#include "core/error.h"

namespace il::runtime {

image::PreprocessorConfig siglip_release_preprocessor(int height, int width) {
  image::PreprocessorConfig c;
  c.processor_type = "SiglipImageProcessor";
  c.resize_height = static_cast<std::size_t>(height);
  c.resize_width = static_cast<std::size_t>(width);
  c.resample = image::ResampleFilter::bicubic;
  return c;
}

ImageLoader::ImageLoader(const std::filesystem::path& dir, const ModelInfo& info, const EngineOptions& options,
                         std::optional<image::PreprocessorConfig> default_config)
    : limits_{options.max_image_bytes, options.max_image_pixels},
      channels_(info.image_channels),
      height_(info.image_height),
      width_(info.image_width) {
  // A folder whose processor we cannot run still serves pixel_values and texts: what is wrong
  // is said when an encoded image arrives.
  const std::filesystem::path file = dir / "preprocessor_config.json";
  try {
    if (!dir.empty() && std::filesystem::exists(file)) {
      config_ = image::read_preprocessor_config(file);
    } else if (default_config) {
      config_ = std::move(default_config);
    } else {
      throw make_error(file.string(), " is missing: without the folder's image processor settings images cannot be "
                       "preprocessed (send preprocessed pixel_values instead)");
    }
    // The processor's output size: the crop when it crops, else the resize.
    const image::PreprocessorConfig& c = *config_;
    const std::size_t h = c.do_center_crop ? c.crop_height : c.resize_height;
    const std::size_t w = c.do_center_crop ? c.crop_width : c.resize_width;
    if (h != 0 && w != 0)
      check(h == static_cast<std::size_t>(height_) && w == static_cast<std::size_t>(width_), file.string(),
            ": the processor makes ", h, "×", w, " images but the model takes ", height_, "×", width_);
    check(channels_ == 3, file.string(), ": the model takes ", channels_, "-channel images; decoding gives RGB");
    byte_values_ = std::make_shared<const std::vector<float>>(image::byte_value_table(c));
  } catch (const Error& e) {
    config_.reset();
    missing_ = e.what();
  }
}

ImageInput ImageLoader::load(const std::vector<std::uint8_t>& bytes, std::string_view name) const {
  if (!config_) throw Error(missing_);
  const image::RgbImage rgb = image::decode_image(std::span<const std::uint8_t>(bytes), name, limits_);
  // Compact (uint8 and the processor's byte values): the engine uploads the bytes and cuts the
  // patches on the device.
  ImageInput in = image::preprocess_compact(rgb, *config_, byte_values_);
  // A shortest-edge resize without a crop gives other sizes: the model takes one size only.
  check(in.height == static_cast<std::size_t>(height_) && in.width == static_cast<std::size_t>(width_), name,
        ": preprocessing gave a ", in.height, "×", in.width, " image but the model takes ", height_, "×", width_);
  return in;
}

}  // namespace il::runtime
