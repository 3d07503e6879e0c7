// What every architecture reads from a model folder besides its config: the checkpoint and the
// sentence-transformers modules (pooling, Dense, Normalize, prompts), plus the description fields
// they give a BuiltModel.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "io/st_modules.h"
#include "models/embedding_head.h"
#include "models/model.h"
#include "models/weight_source.h"

namespace il::models {

struct Folder {
  std::filesystem::path dir;
  std::unique_ptr<SafeTensorsSource> weights;
  io::SentenceTransformerInfo st;
  std::unique_ptr<SafeTensorsSource> dense_weights;  // the Dense module's checkpoint, when there is one

  std::optional<DenseWeights> dense() const;
};

// Opens the checkpoint and reads the modules. Throws il::Error naming the file.
Folder open_folder(const std::filesystem::path& dir);

// The checkpoint's dtype and size, the modules, and the pooling and normalisation defaults they
// give (`fallback_pooling` without a pooling config: sentence-transformers itself falls back to
// mean pooling, decoder embedders to their last token).
void describe_folder(BuiltModel& m, const Folder& f, PoolingMode fallback_pooling);

}  // namespace il::models
