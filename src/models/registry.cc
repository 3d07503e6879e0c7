#include "models/registry.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"
#include "models/bert.h"
#include "models/modernbert.h"
#include "models/nomic_bert.h"
#include "models/deberta.h"
#include "models/deepseek_ocr.h"
#include "models/diffusion_gemma.h"
#include "models/glm_ocr.h"
#include "models/qwen3.h"
#include "models/lfm2.h"
#include "models/siglip.h"

namespace il::models {

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
      {"bert", {"bert", "roberta", "xlm-roberta"},
       "embeddings, hidden states, sequence classification (cross-encoders)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_bert_config(j, s); }, build_bert_folder,
       build_bert_random},
      {"qwen3", {"qwen3"},
       "Qwen3-Embedding (embeddings, hidden states), Qwen3-Reranker (Qwen3ForCausalLM scored by its yes / no "
       "logits)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_qwen3_config(j, s); }, build_qwen3_folder,
       build_qwen3_random},
      {"modernbert", {"modernbert"},
       "ModernBERT: embeddings, hidden states, sequence classification (ModernBertForSequenceClassification "
       "cross-encoders)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_modernbert_config(j, s); },
       build_modernbert_folder, build_modernbert_random},
      {"nomic-bert", {"nomic_bert"}, "nomic-embed-text v1 / v1.5 (embeddings, hidden states)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_nomic_config(j, s); }, build_nomic_folder,
       build_nomic_random},
      {"deberta-v2", {"deberta-v2"},
       "DeBERTa-v2 / v3: embeddings, hidden states, sequence classification (cross-encoders, NLI)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_deberta_config(j, s); }, build_deberta_folder,
       build_deberta_random},
      {"lfm2", {"lfm2"},
       "LFM2 trunks (hidden states; mean-pooled embeddings for a plain Lfm2Model folder; LFM2-ColBERT folders: "
       "hidden states so far, not their per-token vectors or MaxSim scores)",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_lfm2_config(j, s); }, build_lfm2_folder,
       build_lfm2_random},
      {"siglip", {"siglip", "siglip_vision_model", "siglip2", "siglip2_vision_model"},
       "SigLIP: image embeddings (the MAP head) and image hidden states from SiglipModel / SiglipVisionModel "
       "folders; SigLIP 2 refused with the reason",
       [](const nlohmann::json& j, const std::string& s) { (void)parse_siglip_config(j, s); }, build_siglip_folder,
       build_siglip_random},
      {"glm_ocr", {"glm_ocr"}, "OCR: page images to text (GLM-OCR)", check_glm_ocr_config, build_glm_ocr_folder,
       build_glm_ocr_random},
      {"diffusion_gemma", {"diffusion_gemma"},
       "DiffusionGemma: block-diffusion text generation", check_diffusion_gemma_config, build_diffusion_gemma_folder,
       build_diffusion_gemma_random},
      {"deepseek_ocr", {"deepseek_ocr2", "deepseek_vl_v2"},
       "OCR: page images to text (DeepSeek-OCR-2; DeepSeek-OCR v1, DeepseekOCRForCausalLM, from the original folder)",
       check_deepseek_ocr_config, build_deepseek_ocr_folder, build_deepseek_ocr_random},
  };
  return table;
}

const Architecture& find_architecture(const nlohmann::json& config, const std::string& source) {
  check(config.is_object(), source, ": expected a JSON object, got ", io::detail::type_name(config));
  const std::string type = io::detail::req_string(config, "model_type", source);
  std::string supported;
  for (const Architecture& a : architectures()) {
    for (const std::string& t : a.model_types) {
      if (t == type) return a;
      supported += (supported.empty() ? "" : ", ") + t;
    }
  }
  throw make_error(source, ": model_type \"", type, "\" is not supported (supported: ", supported, ")");
}

BuiltModel build_model_from_folder(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "config.json";
  const nlohmann::json config = io::read_json_file(file);
  return find_architecture(config, file.string()).from_folder(dir, config, file.string());
}

BuiltModel build_model_random(const nlohmann::json& config, const std::string& source) {
  BuiltModel m = find_architecture(config, source).random(config, source);
  m.random_weights = true;
  return m;
}

}  // namespace il::models
