// `inferencelayer info`: what a model folder holds, for people (default) or tools (--json).
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"

namespace il::cli {
namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
};

const char* kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::kEmbedding: return "embedding";
    case ModelKind::kCrossEncoder: return "cross-encoder";
  }
  return "?";
}

// "embed", "hidden_states", "score", ... in a fixed order.
std::vector<std::string> capability_names(const Capabilities& c) {
  std::vector<std::string> names;
  for (const auto& [on, name] : {std::pair{c.embed, "embed"}, {c.hidden_states, "hidden_states"}, {c.score, "score"},
                                 {c.multi_vector, "multi_vector"}, {c.image_input, "image_input"},
                                 {c.generate, "generate"}, {c.ocr, "ocr"}})
    if (on) names.push_back(name);
  return names;
}

nlohmann::ordered_json to_json(const ModelInfo& i) {
  // Ordered as a person reads it; consumers look fields up by name.
  nlohmann::ordered_json j;
  j["path"] = i.path;
  j["model_type"] = i.model_type;
  j["architecture"] = i.architecture;
  j["layout"] = i.layout;
  j["kind"] = kind_name(i.kind);
  j["capabilities"] = capability_names(i.capabilities);
  j["hidden"] = i.hidden;
  j["layers"] = i.layers;
  j["heads"] = i.heads;
  j["kv_heads"] = i.kv_heads;
  j["intermediate"] = i.intermediate;
  j["vocab"] = i.vocab;
  j["max_tokens"] = i.max_tokens;
  j["num_labels"] = i.num_labels;
  j["labels"] = i.labels;
  j["output_dim"] = i.output_dim;
  j["activation"] = i.activation;
  j["dtype"] = i.stored_dtype;
  j["parameters"] = i.parameters;
  j["weight_bytes"] = i.weight_bytes;
  j["weight_mb"] = static_cast<double>(i.weight_bytes) / 1e6;
  j["pooling"] = std::string(pooling_name(i.pooling));
  j["normalize"] = i.normalize;
  j["sentence_transformers"] = i.sentence_transformers;
  j["tokenizer"] = i.tokenizer.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(i.tokenizer);
  j["prompts"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : i.prompts) j["prompts"][k] = v;
  j["default_prompt_name"] =
      i.default_prompt_name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(i.default_prompt_name);
  j["include_prompt"] = i.include_prompt;
  j["random_weights"] = i.random_weights;
  if (i.capabilities.image_input) {
    j["image"] = {{"channels", i.image_channels}, {"height", i.image_height}, {"width", i.image_width},
                  {"patch_size", i.patch_size}, {"embedding_dim", i.image_embedding_dim}};
    if (i.has_logit) j["image"]["logit"] = {{"scale", i.logit_scale}, {"bias", i.logit_bias}};
  }
  if (!i.notes.empty()) j["notes"] = i.notes;
  return j;
}

void print_row(const char* key, const std::string& value) { std::printf("%-22s %s\n", key, value.c_str()); }

void print_human(const ModelInfo& i) {
  print_row("model", i.path);
  print_row("architecture", i.architecture + " (model_type " + i.model_type + ", layout " + i.layout + ")");
  print_row("kind", i.kind == ModelKind::kCrossEncoder
                        ? "cross-encoder (reranker), " + std::to_string(i.num_labels) + " label(s)"
                        : std::string("embedding"));
  if (i.kind == ModelKind::kCrossEncoder) {
    std::string names;
    for (std::size_t l = 0; l < i.labels.size(); ++l)
      names += (l ? ", " : "") + std::to_string(l) + " " +
               nlohmann::json(i.labels[l]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    print_row("labels", names);
  }
  print_row("hidden size", std::to_string(i.hidden));
  print_row("layers", std::to_string(i.layers));
  std::string caps;
  for (const std::string& c : capability_names(i.capabilities)) caps += (caps.empty() ? "" : ", ") + c;
  print_row("capabilities", caps);
  print_row("attention heads", std::to_string(i.heads) +
                                   (i.kv_heads > 0 && i.kv_heads != i.heads
                                        ? " (" + std::to_string(i.kv_heads) + " key / value heads)"
                                        : ""));
  print_row("intermediate size", std::to_string(i.intermediate));
  print_row("activation", i.activation);
  print_row("vocabulary", std::to_string(i.vocab));
  print_row("max tokens", std::to_string(i.max_tokens) + " per sequence");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(i.parameters) / 1e6);
  print_row("parameters", buf);
  std::snprintf(buf, sizeof buf, "%.1f MB (%s)", static_cast<double>(i.weight_bytes) / 1e6, i.stored_dtype.c_str());
  print_row("weights", buf);
  if (i.kind == ModelKind::kEmbedding && !i.capabilities.generate) {
    print_row("pooling", std::string(pooling_name(i.pooling)));
    print_row("normalize", i.normalize ? "yes" : "no");
    if (!i.include_prompt) print_row("prompt tokens", "left out of pooling (include_prompt: false)");
    print_row("output dimensions", std::to_string(i.output_dim));
  }
  for (const std::string& n : i.notes) print_row("note", n);
  print_row("sentence-transformers", i.sentence_transformers ? "yes" : "no");
  print_row("tokenizer", i.tokenizer.empty() ? "none (no tokenizer.json)" : i.tokenizer);
  if (i.prompts.empty()) print_row("prompts", "none");
  for (const auto& [k, v] : i.prompts) {
    const std::string dflt = k == i.default_prompt_name ? " (default)" : "";
    print_row(("prompt " + k).c_str(), nlohmann::json(v).dump() + dflt);
  }
  if (i.capabilities.image_input) {
    const int grid_rows = i.patch_size ? i.image_height / i.patch_size : 0;
    const int grid_cols = i.patch_size ? i.image_width / i.patch_size : 0;
    print_row("image input", std::to_string(i.image_channels) + " × " + std::to_string(i.image_height) + " × " +
                                 std::to_string(i.image_width) + " pixel_values, " + std::to_string(grid_rows * grid_cols) +
                                 " patches of " + std::to_string(i.patch_size) + " × " + std::to_string(i.patch_size));
    print_row("image embedding", i.image_embedding_dim > 0 ? std::to_string(i.image_embedding_dim) + " dimensions"
                                                          : std::string("none (no pooling head)"));
    if (i.has_logit) {
      char logit[128];
      std::snprintf(logit, sizeof logit, "exp(%.6g) · cos(image, text) + %.6g", static_cast<double>(i.logit_scale),
                    static_cast<double>(i.logit_bias));
      print_row("pair logit", logit);
    }
  }
  if (i.random_weights) print_row("random weights", "yes: a demo/test model, its outputs carry no meaning");
}

void run_info(const InfoArgs& a) {
  EngineArgs e;
  e.model = a.model;
  e.max_batch_tokens = 1;  // the engine raises it to one sequence: the smallest scratch it allows
  e.threads = 1;
  const auto engine = load_engine(e, /*notice=*/false);  // the report says it itself
  if (a.json) std::printf("%s\n", to_json(engine->info()).dump().c_str());
  else print_human(engine->info());
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Describe a model folder (architecture, sizes, pooling, prompts)");
  cmd->footer(
      "--json writes one object with: path, model_type, architecture, layout, kind (embedding |\n"
      "cross-encoder), capabilities (of embed, hidden_states, score, multi_vector, image_input,\n"
      "generate), hidden, layers, heads, kv_heads, intermediate, vocab, max_tokens, num_labels, labels\n"
      "(cross-encoders: the name of each output, from config.json id2label), output_dim, activation,\n"
      "dtype, parameters, weight_bytes, weight_mb, pooling, normalize, sentence_transformers,\n"
      "tokenizer, prompts, default_prompt_name, random_weights; image models add image: {channels,\n"
      "height, width, patch_size, embedding_dim, and logit: {scale, bias} for image-text models}.");
  cmd->add_option("-m,--model", a->model, "Hugging Face model folder")->required();
  cmd->add_flag("--json", a->json, "One JSON object instead of the table");
  return {cmd, [a] { run_info(*a); }};
}

}  // namespace il::cli
