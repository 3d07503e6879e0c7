#include "models/colbert_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

// Python's string.punctuation, PyLate's default skiplist.
constexpr const char kPunctuation[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

}  // namespace

ColbertConfig default_colbert_config() {
  ColbertConfig c;
  for (const char* p = kPunctuation; *p != '\0'; ++p) c.skiplist_words.emplace_back(1, *p);
  return c;
}

ColbertConfig parse_colbert_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  ColbertConfig c = default_colbert_config();
  // PyLate keeps its default where the key is absent or null (its _parse_model_config assigns
  // only over None, then falls back to the defaults).
  if (const auto v = d::opt_string(j, "query_prefix", src)) c.query_prefix = *v;
  if (const auto v = d::opt_string(j, "document_prefix", src)) c.document_prefix = *v;
  // A marker takes one of the positions: a length must leave room for at least one more token.
  const int min_query = c.query_prefix.empty() ? 1 : 2;
  const int min_document = c.document_prefix.empty() ? 1 : 2;
  if (j.contains("query_length") && !j.at("query_length").is_null())
    c.query_length = d::int_in_range(j, "query_length", src, min_query, 1 << 20);
  if (j.contains("document_length") && !j.at("document_length").is_null())
    c.document_length = d::int_in_range(j, "document_length", src, min_document, 1 << 20);
  c.do_query_expansion = d::opt_bool(j, "do_query_expansion", src).value_or(true);
  c.attend_to_expansion_tokens = d::opt_bool(j, "attend_to_expansion_tokens", src).value_or(false);
  if (!c.do_query_expansion) c.attend_to_expansion_tokens = false;  // as PyLate forces it
  if (const auto it = j.find("skiplist_words"); it != j.end() && !it->is_null()) {
    check(it->is_array(), src, ": field \"skiplist_words\" must be an array of strings, got ", d::describe(*it));
    c.skiplist_words.clear();
    for (const json& w : *it) {
      check(w.is_string(), src, ": field \"skiplist_words\" holds ", d::describe(w), " (strings only)");
      c.skiplist_words.push_back(w.get<std::string>());
    }
  }
  return c;
}

ColbertConfig read_colbert_config(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "config_sentence_transformers.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return default_colbert_config();
  return parse_colbert_config(io::detail::read_json_file(file), file.string());
}

}  // namespace il::models
