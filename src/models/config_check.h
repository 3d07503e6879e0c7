// A model folder's configs checked against the tensors they describe, before anything is built.
// A config that disagrees with its checkpoint is refused, naming the file, the field, what the
// tensors imply and what the field says: an unused token-type table or extra layers would
// otherwise be ignored silently, and a shape mismatch would be reported as a tensor's problem
// when the field is what to fix.
#pragma once

#include <filesystem>

#include "models/bert_config.h"
#include "io/safetensors.h"
#include "io/st_modules.h"
#include "models/bert.h"

namespace il::models {

// config.json (`config_file`, already parsed into `cfg`) against the checkpoint: hidden_size,
// vocab_size, max_position_embeddings, type_vocab_size, num_hidden_layers, intermediate_size and,
// for a cross-encoder, num_labels.
void check_config_against_tensors(const BertConfig& cfg, const std::filesystem::path& config_file,
                                  const io::SafeTensors& tensors, const WeightSource& src, const BertNames& names);

// The sentence-transformers modules against the model: Pooling's word_embedding_dimension and
// Dense's in_features against hidden_size, Dense's features against its own linear tensors
// (`dense`, when there is a Dense module).
void check_modules_against_model(const io::SentenceTransformerInfo& st, int hidden,
                                 const std::filesystem::path& config_file, const io::SafeTensors* dense);

}  // namespace il::models
