#include "models/folder.h"

namespace il::models {

std::optional<DenseWeights> Folder::dense() const {
  if (!st.dense || !dense_weights) return std::nullopt;
  return DenseWeights{dense_weights.get(), *st.dense};
}

Folder open_folder(const std::filesystem::path& dir) {
  Folder f;
  f.dir = dir;
  f.st = io::load_sentence_transformer_info(dir);
  f.weights = std::make_unique<SafeTensorsSource>(io::SafeTensors::open(dir));
  if (f.st.dense) f.dense_weights = std::make_unique<SafeTensorsSource>(io::SafeTensors::open(f.st.dense->dir));
  return f;
}

void describe_folder(BuiltModel& m, const Folder& f, PoolingMode fallback_pooling) {
  m.st = f.st;
  m.pooling = f.st.pooling.value_or(fallback_pooling);
  m.normalize = f.st.normalize;
  m.stored_dtype = std::string(dtype_name(f.weights->tensors().dominant_dtype()));
  m.stored_bytes = f.weights->tensors().total_bytes();
}

}  // namespace il::models
