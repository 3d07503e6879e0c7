#include "io/st_modules.h"

#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "io/json_util.h"

namespace il::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr long long kMaxFeatures = 1LL << 24;

// "sentence_transformers.models.Pooling" and the v5 spelling
// "sentence_transformers.sentence_transformer.modules.pooling.Pooling" both end in the class name;
// so do torch activations ("torch.nn.modules.activation.Tanh").
std::string_view class_name(std::string_view type) {
  const auto dot = type.rfind('.');
  return dot == std::string_view::npos ? type : type.substr(dot + 1);
}

// Module paths come from the folder's own metadata; refuse ones that would leave the folder.
fs::path module_dir(const fs::path& model_dir, const std::string& rel, const std::string& label) {
  const fs::path p(rel);
  bool escapes = !p.is_relative();
  for (const auto& part : p) escapes = escapes || part == "..";
  check(!escapes, label, ": module path \"", rel, "\" must be a folder inside ", model_dir.string());
  return rel.empty() ? model_dir : model_dir / p;
}

struct PoolFlag {
  const char* key;
  const char* mode;  // the name sentence-transformers uses in `pooling_mode`
  bool fallback;     // Pooling.__init__ default, used when the key is absent
};

constexpr std::array<PoolFlag, 6> kPoolFlags{{
    {"pooling_mode_cls_token", "cls", false},
    {"pooling_mode_mean_tokens", "mean", true},
    {"pooling_mode_max_tokens", "max", false},
    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens", false},
    {"pooling_mode_weightedmean_tokens", "weightedmean", false},
    {"pooling_mode_lasttoken", "lasttoken", false},
}};

PoolingMode read_pooling(const fs::path& dir, SentenceTransformerInfo& info) {
  const fs::path file = dir / "config.json";
  const std::string label = file.string();
  const json j = detail::read_json_file(file);
  check(j.is_object(), label, ": expected a JSON object, got ", detail::type_name(j));

  // Pooling(**config): a `pooling_mode` string overrides every flag, and absent flags take the
  // constructor defaults (mean on), exactly as sentence-transformers reads the file.
  std::array<bool, kPoolFlags.size()> on{};
  if (auto mode = detail::opt_string(j, "pooling_mode", label)) {
    for (char& ch : *mode) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));  // as ST does
    bool known = false;
    for (std::size_t i = 0; i < kPoolFlags.size(); ++i) {
      on[i] = *mode == kPoolFlags[i].mode;
      known = known || on[i];
    }
    check(known, label, ": field \"pooling_mode\" = \"", *mode,
          "\" is not a pooling mode (cls, lasttoken, max, mean, mean_sqrt_len_tokens, weightedmean)");
  } else {
    for (std::size_t i = 0; i < kPoolFlags.size(); ++i) {
      on[i] = detail::opt_bool(j, kPoolFlags[i].key, label).value_or(kPoolFlags[i].fallback);
    }
  }
  info.include_prompt = detail::opt_bool(j, "include_prompt", label).value_or(true);
  info.pooling_file = file;
  // Checked against the model's hidden size once the model is known (models/config_check).
  if (detail::opt_int(j, "word_embedding_dimension", label))
    info.pooling_dimension = detail::int_in_range(j, "word_embedding_dimension", label, 1, kMaxFeatures);

  std::string set;
  std::size_t count = 0, which = 0;
  for (std::size_t i = 0; i < kPoolFlags.size(); ++i) {
    if (!on[i]) continue;
    set += (count ? ", " : "") + std::string(kPoolFlags[i].key);
    ++count;
    which = i;
  }
  check(count > 0, label, ": no pooling mode is set");
  check(count == 1, label, ": several pooling modes are set (", set,
        "); concatenated poolings are not supported (supported: one of cls, mean, lasttoken)");
  const std::string_view mode = kPoolFlags[which].mode;
  if (mode == "cls") return PoolingMode::kCls;
  if (mode == "mean") return PoolingMode::kMean;
  if (mode == "lasttoken") return PoolingMode::kLastToken;
  throw make_error(label, ": pooling mode ", kPoolFlags[which].key, " (", mode,
                   ") is not supported (supported: cls, mean, lasttoken)");
}

Activation parse_torch_activation(const std::string& name, const std::string& label) {
  const std::string_view cls = class_name(name);
  if (cls == "Identity") return Activation::kNone;
  if (cls == "Tanh") return Activation::kTanh;
  if (cls == "ReLU") return Activation::kRelu;
  if (cls == "GELU") return Activation::kGeluErf;  // built with defaults: approximate='none'
  if (cls == "SiLU") return Activation::kSilu;
  throw make_error(label, ": activation_function \"", name,
                   "\" is not supported (supported: torch.nn Identity, Tanh, ReLU, GELU, SiLU)");
}

DenseModule read_dense(const fs::path& dir, bool pylate, bool after_pooling) {
  const fs::path file = dir / "config.json";
  const std::string label = file.string();
  const json j = detail::read_json_file(file);
  check(j.is_object(), label, ": expected a JSON object, got ", detail::type_name(j));
  DenseModule d;
  d.dir = dir;
  d.in_features = detail::int_in_range(j, "in_features", label, 1, kMaxFeatures);
  d.out_features = detail::int_in_range(j, "out_features", label, 1, kMaxFeatures);
  d.bias = detail::opt_bool(j, "bias", label).value_or(true);
  // Constructor defaults when the key is absent: Tanh in sentence-transformers, Identity in pylate.
  const auto act = detail::opt_string(j, "activation_function", label);
  d.act = act ? parse_torch_activation(*act, label) : (pylate ? Activation::kNone : Activation::kTanh);
  check(!detail::opt_bool(j, "use_residual", label).value_or(false), label,
        ": field \"use_residual\" = true is not supported");
  const std::string input =
      detail::opt_string(j, "module_input_name", label).value_or(pylate ? "token_embeddings" : "sentence_embedding");
  check(!after_pooling || input == "sentence_embedding", label, ": field \"module_input_name\" = \"", input,
        "\" after a Pooling module is not supported (supported: sentence_embedding)");
  return d;
}

void read_prompts(const fs::path& model_dir, SentenceTransformerInfo& info) {
  const fs::path file = model_dir / "config_sentence_transformers.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  const std::string label = file.string();
  const json j = detail::read_json_file(file);
  check(j.is_object(), label, ": expected a JSON object, got ", detail::type_name(j));
  auto it = j.find("prompts");
  if (it != j.end() && !it->is_null()) {
    check(it->is_object(), label, ": field \"prompts\" must be an object of strings, got ", detail::describe(*it));
    for (auto p = it->begin(); p != it->end(); ++p) {
      check(p->is_string(), label, ": field \"prompts\": prompt \"", p.key(), "\" must be a string, got ",
            detail::describe(*p));
      info.prompts[p.key()] = p->get<std::string>();
    }
  }
  info.default_prompt_name = detail::opt_string(j, "default_prompt_name", label).value_or("");
  check(info.default_prompt_name.empty() || info.prompts.count(info.default_prompt_name) > 0, label,
        ": field \"default_prompt_name\" = \"", info.default_prompt_name, "\" is not one of the prompts");
}

// max_seq_length lives next to the Transformer module (the folder root in current exports).
void read_max_seq_length(const fs::path& transformer_dir, const fs::path& model_dir, SentenceTransformerInfo& info) {
  std::error_code ec;
  fs::path file = transformer_dir / "sentence_bert_config.json";
  if (!fs::exists(file, ec)) file = model_dir / "sentence_bert_config.json";
  if (!fs::exists(file, ec)) return;
  const std::string label = file.string();
  const json j = detail::read_json_file(file);
  check(j.is_object(), label, ": expected a JSON object, got ", detail::type_name(j));
  info.max_seq_length = detail::int_in_range(j, "max_seq_length", label, 1, kMaxFeatures, 0);
}

SentenceTransformerInfo load_impl(const fs::path& model_dir) {
  SentenceTransformerInfo info;
  const fs::path modules_file = model_dir / "modules.json";
  std::error_code ec;
  if (!fs::exists(modules_file, ec)) return info;
  info.present = true;
  const std::string label = modules_file.string();
  const json mods = detail::read_json_file(modules_file);
  check(mods.is_array(), label, ": expected a JSON array of modules, got ", detail::type_name(mods));

  fs::path transformer_dir = model_dir;
  bool seen_pooling = false;
  for (const json& m : mods) {
    check(m.is_object(), label, ": each module must be an object, got ", detail::describe(m));
    const std::string type = detail::req_string(m, "type", label);
    const fs::path dir = module_dir(model_dir, detail::opt_string(m, "path", label).value_or(""), label);
    const std::string_view cls = class_name(type);
    if (cls == "Transformer") {
      transformer_dir = dir;
    } else if (cls == "Pooling") {
      check(!seen_pooling, label, ": more than one Pooling module is listed");
      check(!info.dense, label, ": a Dense module before Pooling is not supported");
      info.pooling = read_pooling(dir, info);
      seen_pooling = true;
    } else if (cls == "Normalize") {
      info.normalize = true;
    } else if (cls == "Dense") {
      check(!info.dense, label, ": more than one Dense module is listed; only one is supported");
      // The engine applies Dense before the final L2 norm; a listed order that says otherwise
      // would compute something else.
      check(!info.normalize, label, ": a Dense module after Normalize is not supported");
      info.dense = read_dense(dir, type.rfind("pylate.", 0) == 0, seen_pooling);
    } else if (cls == "Dropout") {
      // identity at inference
    } else {
      throw make_error(label, ": module type \"", type,
                       "\" is not supported (supported: Transformer, Pooling, Normalize, Dense, Dropout)");
    }
  }
  read_prompts(model_dir, info);
  read_max_seq_length(transformer_dir, model_dir, info);
  return info;
}

}  // namespace

SentenceTransformerInfo load_sentence_transformer_info(const fs::path& model_dir) {
  try {
    return load_impl(model_dir);
  } catch (const json::exception& e) {  // defensive: accessors check types, so this is not expected
    throw make_error(model_dir.string(), ": sentence-transformers metadata: ", e.what());
  }
}

}  // namespace il::io
