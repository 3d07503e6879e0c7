#include "runtime/colbert_inputs.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"

namespace il::runtime {
namespace {

using nlohmann::json;

// A special token's text in tokenizer_config.json / special_tokens_map.json: a string or an
// AddedToken object {"content": ...}.
std::optional<std::string> token_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && it->at("content").is_string())
    return it->at("content").get<std::string>();
  return std::nullopt;
}

json read_if_present(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return json::object();
  json j = io::read_json_file(file);
  return j.is_object() ? j : json::object();
}

}  // namespace

ColbertTokens resolve_colbert_tokens(const models::ColbertConfig& c, const text::Tokenizer& tok,
                                     const std::filesystem::path& dir) {
  ColbertTokens t;
  t.query_length = static_cast<std::size_t>(c.query_length);
  t.document_length = static_cast<std::size_t>(c.document_length);
  t.expand_queries = c.do_query_expansion;
  const std::string tok_file = (dir / "tokenizer.json").string();
  const auto marker = [&](const std::string& prefix, const char* field) -> std::optional<int32_t> {
    if (prefix.empty()) return std::nullopt;
    const std::optional<int32_t> id = tok.token_to_id(prefix);
    check(id.has_value(), (dir / "config_sentence_transformers.json").string(), ": field \"", field, "\" = \"",
          prefix, "\" is not a token of ", tok_file,
          " (PyLate adds its markers to the tokenizer as tokens of their own before it saves a model)");
    return id;
  };
  t.query_marker = marker(c.query_prefix, "query_prefix");
  t.document_marker = marker(c.document_prefix, "document_prefix");

  const json config = read_if_present(dir / "tokenizer_config.json");
  const json special = read_if_present(dir / "special_tokens_map.json");
  const auto special_token = [&](const char* key) {
    std::optional<std::string> s = token_field(config, key);
    return s ? s : token_field(special, key);
  };
  // PyLate pads queries with the tokenizer's mask token, else its EOS token (decoder models such
  // as LFM2), else its pad token.
  std::optional<int32_t> expansion;
  std::string tried;
  for (const char* key : {"mask_token", "eos_token", "pad_token"}) {
    const std::optional<std::string> s = special_token(key);
    if (!s) continue;
    expansion = tok.token_to_id(*s);
    check(expansion.has_value(), (dir / "tokenizer_config.json").string(), ": ", key, " \"", *s,
          "\" is not a token of ", tok_file);
    break;
  }
  if (c.do_query_expansion)
    check(expansion.has_value(), dir.string(),
          ": query expansion needs a mask, EOS or pad token (tokenizer_config.json names none)");
  t.expansion_id = expansion.value_or(0);
  const auto side = [&](const char* key) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return false;
    check(it->is_string() && (*it == "left" || *it == "right"), (dir / "tokenizer_config.json").string(),
          ": field \"", key, "\" must be \"left\" or \"right\"");
    return *it == "left";
  };
  t.pad_left = side("padding_side");
  t.truncate_left = side("truncation_side");
  t.mask_expansion = c.do_query_expansion && !c.attend_to_expansion_tokens;
  // Masked expansion tokens on the left would be keys hidden before the text; the engine hides
  // only the keys after a prefix (plan::Batch::key_limits).
  check(!(t.mask_expansion && t.pad_left), (dir / "tokenizer_config.json").string(),
        ": padding_side \"left\" with masked query expansion (attend_to_expansion_tokens false) is not supported");
  // tokenizer.convert_tokens_to_ids of each word: a word outside the vocabulary maps to the
  // unknown token where there is one.
  const std::optional<std::string> unk = special_token("unk_token");
  // -1: no unknown token (GCC cannot follow an optional through here without a false warning).
  const int32_t unk_id = unk ? tok.token_to_id(*unk).value_or(-1) : -1;
  for (const std::string& w : c.skiplist_words) {
    const int32_t id = tok.token_to_id(w).value_or(unk_id);
    if (id >= 0) t.skiplist.push_back(id);
  }
  std::sort(t.skiplist.begin(), t.skiplist.end());
  t.skiplist.erase(std::unique(t.skiplist.begin(), t.skiplist.end()), t.skiplist.end());
  return t;
}

std::size_t colbert_text_budget(const ColbertTokens& t, bool query) {
  const std::size_t length = query ? t.query_length : t.document_length;
  const bool marker = (query ? t.query_marker : t.document_marker).has_value();
  return marker ? length - 1 : length;  // lengths leave room for the marker (ColbertConfig checks)
}

TokenInput colbert_input(std::vector<int32_t> ids, const ColbertTokens& t, bool query) {
  std::size_t expansion = 0;
  if (query && t.expand_queries) {
    const std::size_t budget = colbert_text_budget(t, true);
    if (ids.size() < budget) {
      expansion = budget - ids.size();
      ids.insert(t.pad_left ? ids.begin() : ids.end(), expansion, t.expansion_id);
    }
  }
  const std::optional<int32_t> marker = query ? t.query_marker : t.document_marker;
  // After the first token (torch.cat of ids[:, :1], the marker, ids[:, 1:]): first of all when
  // there is no token.
  if (marker) ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(1, ids.size())), *marker);
  TokenInput in;
  if (query && t.mask_expansion && expansion > 0) {
    // PyLate's attention mask: 1 on the text and the marker, 0 on the expansion tokens (at the
    // end: left padding is refused with masked expansion).
    check(ids.size() > expansion + 1 || !marker, "a query needs a token before its marker");
    in.attended_tokens = ids.size() - expansion;
  }
  if (!query) {
    in.keep.resize(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      in.keep[i] = std::binary_search(t.skiplist.begin(), t.skiplist.end(), ids[i]) ? 0 : 1;
  }
  in.ids = std::move(ids);
  return in;
}

}  // namespace il::runtime
