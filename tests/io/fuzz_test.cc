// Seeded mutation fuzzing of every loader: starting from valid files, thousands of random edits
// (byte flips, truncation, header length changes, JSON edits) must each either load or throw
// il::Error. Under ASan+UBSan this also proves no out-of-bounds read and no UB on bad input.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/bert_config.h"
#include "io/safetensors.h"
#include "io/safetensors_format.h"
#include "io/st_modules.h"
#include "io_test_util.h"

namespace il::io {
namespace {

using models::BertConfig;
using models::BertFlavor;
using models::load_bert_config;
using models::parse_bert_config;

using nlohmann::json;
using test::TempDir;
using test::write_file;

using Rng = std::mt19937_64;

std::size_t pick(Rng& rng, std::size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

// Characters that make JSON edits land on interesting parse paths.
constexpr std::string_view kJsonChars = "{}[]\",:-+.0123456789eE \\truefalsnI\x01\xff";

// One textual edit of a JSON document.
void mutate_json_text(std::string& s, Rng& rng) {
  static const std::vector<std::string> kTokens = {"null",
                                                   "true",
                                                   "-1",
                                                   "0",
                                                   "1e400",
                                                   "18446744073709551616",
                                                   "9223372036854775807",
                                                   "-9223372036854775808",
                                                   "\"\"",
                                                   "[]",
                                                   "{}",
                                                   "\"I64\"",
                                                   "\"F16\"",
                                                   "\"BF16\"",
                                                   "\"F32\"",
                                                   "2147483648",
                                                   "0.5",
                                                   "[0,0]",
                                                   "\"\\u0000\""};
  switch (pick(rng, 6)) {
    case 0:  // replace one character
      if (!s.empty()) s[pick(rng, s.size())] = kJsonChars[pick(rng, kJsonChars.size())];
      break;
    case 1:  // delete a short run
      if (!s.empty()) {
        const std::size_t at = pick(rng, s.size());
        s.erase(at, 1 + pick(rng, 8));
      }
      break;
    case 2:  // insert a character
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(rng, s.size() + 1)),
               kJsonChars[pick(rng, kJsonChars.size())]);
      break;
    case 3: {  // replace a number with a nasty token
      std::vector<std::size_t> digits;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] >= '0' && s[i] <= '9' && (i == 0 || !(s[i - 1] >= '0' && s[i - 1] <= '9'))) digits.push_back(i);
      if (digits.empty()) break;
      const std::size_t at = digits[pick(rng, digits.size())];
      std::size_t end = at;
      while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
      s.replace(at, end - at, kTokens[pick(rng, kTokens.size())]);
      break;
    }
    case 4: {  // replace a quoted string with a token
      const std::size_t q = s.find('"', pick(rng, s.size() + 1));
      if (q == std::string::npos) break;
      const std::size_t q2 = s.find('"', q + 1);
      if (q2 == std::string::npos) break;
      s.replace(q, q2 - q + 1, kTokens[pick(rng, kTokens.size())]);
      break;
    }
    default: {  // duplicate a slice somewhere else
      if (s.empty()) break;
      const std::size_t a = pick(rng, s.size());
      const std::string slice = s.substr(a, 1 + pick(rng, 24));
      s.insert(pick(rng, s.size() + 1), slice);
      break;
    }
  }
}

std::string valid_safetensors() {
  using test::RawTensor;
  return test::build_safetensors(
      {test::f32_tensor("embeddings.word_embeddings.weight", {4, 3}, std::vector<float>(12, 0.25f)),
       {"encoder.layer.0.attention.self.query.weight", "F16", {3, 3}, std::string(18, '\x3c')},
       {"encoder.layer.0.attention.self.query.bias", "BF16", {3}, std::string(6, '\x3f')},
       test::f32_tensor("pooler.dense.bias", {3}, {1.0f, -1.0f, 0.0f}),
       {"encoder.layer.0.output.dense.bias", "BF16", {6}, std::string(12, '\x40')}},
      0, json{{"format", "pt"}});
}

// Rewrites the 8-byte length prefix.
void set_header_len(std::string& bytes, uint64_t n) {
  for (int i = 0; i < 8 && i < static_cast<int>(bytes.size()); ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
}

// A structural edit of one header entry: the JSON stays valid so validation, not the parser,
// has to catch it.
void mutate_header_json(json& h, Rng& rng) {
  std::vector<std::string> names;
  for (auto it = h.begin(); it != h.end(); ++it) names.push_back(it.key());
  if (names.empty()) return;
  json& e = h[names[pick(rng, names.size())]];
  const json& other = h[names[pick(rng, names.size())]];
  const json values[] = {-1, 0, 1, 2, 3, 7, 12, 1LL << 40, json(1ULL << 63), 0.5, nullptr, "x", json::array()};
  const json& value = values[pick(rng, std::size(values))];
  if (!e.is_object()) {
    e = value;
    return;
  }
  switch (pick(rng, 8)) {
    case 0:  // move one end of the byte range
      if (e.contains("data_offsets") && e["data_offsets"].is_array() && e["data_offsets"].size() == 2 &&
          e["data_offsets"][0].is_number_integer()) {
        const long long delta = static_cast<long long>(pick(rng, 9)) - 4;
        auto& offsets = e["data_offsets"];
        if (pick(rng, 2)) {  // slide the whole range: overlaps a neighbour, or leaves the file
          for (auto& v : offsets)
            if (v.is_number_integer()) v = v.get<long long>() + delta;
        } else {
          auto& v = offsets[pick(rng, 2)];
          if (v.is_number_integer()) v = v.get<long long>() + delta;
        }
      }
      break;
    case 1:  // take another tensor's range (overlap, or a size mismatch)
      if (other.is_object() && other.contains("data_offsets")) e["data_offsets"] = other["data_offsets"];
      break;
    case 2:  // change, add or drop a dimension
      if (e.contains("shape") && e["shape"].is_array()) {
        auto& shape = e["shape"];
        const std::size_t op = pick(rng, 3);
        if (op == 0 && !shape.empty()) shape[pick(rng, shape.size())] = value;
        if (op == 1) shape.push_back(pick(rng, 2) ? json(0) : value);
        if (op == 2 && !shape.empty()) shape.erase(shape.size() - 1);
      }
      break;
    case 3: {
      const char* dtypes[] = {"F32", "F16", "BF16", "I64", "U8", "f32", "F64", "BOOL"};
      e["dtype"] = dtypes[pick(rng, std::size(dtypes))];
      break;
    }
    case 4: {
      const char* keys[] = {"dtype", "shape", "data_offsets"};
      e.erase(keys[pick(rng, 3)]);
      break;
    }
    case 5: {
      const char* keys[] = {"dtype", "shape", "data_offsets"};
      e[keys[pick(rng, 3)]] = value;
      break;
    }
    case 6:  // a new tensor somewhere in the data section
      h["extra." + std::to_string(pick(rng, 1000))] = {{"dtype", pick(rng, 2) ? "F32" : "BF16"},
                                                       {"shape", {pick(rng, 5)}},
                                                       {"data_offsets", {pick(rng, 100), pick(rng, 100)}}};
      break;
    default:
      e = value;
      break;
  }
}

std::string mutate_safetensors(const std::string& base, Rng& rng) {
  std::string b = base;
  const int edits = 1 + static_cast<int>(pick(rng, 3));
  for (int e = 0; e < edits; ++e) {
    uint64_t header_len = 0;
    if (b.size() >= 8)
      for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(b[i]);
    const bool whole_header = b.size() >= 8 && header_len <= b.size() - 8;
    const std::size_t kind = pick(rng, 20);
    if (kind < 7 && whole_header) {  // structural JSON edit, length prefix kept consistent
      json h = json::parse(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(header_len), nullptr, false);
      if (h.is_discarded()) continue;
      mutate_header_json(h, rng);
      b = test::assemble(h.dump(), b.substr(8 + header_len));
    } else if (kind < 12 && whole_header) {  // textual JSON edit, length prefix mostly consistent
      std::string header = b.substr(8, header_len);
      const std::string data = b.substr(8 + header_len);
      mutate_json_text(header, rng);
      b = test::assemble(header, data);
      if (pick(rng, 5) == 0) set_header_len(b, header_len);
    } else if (kind < 15) {  // flip a bit anywhere
      if (!b.empty()) b[pick(rng, b.size())] ^= static_cast<char>(1 << pick(rng, 8));
    } else if (kind < 17) {  // truncate, or grow the data section
      if (pick(rng, 2))
        b.resize(pick(rng, b.size() + 1));
      else
        b.append(pick(rng, 8), '\x7f');
    } else {  // header length: small delta, random, a power of two, or the file size
      const uint64_t choices[] = {header_len + pick(rng, 9) - 4, header_len + pick(rng, 9) - 4,   rng(),
                                  uint64_t{1} << pick(rng, 64),  static_cast<uint64_t>(b.size()), 0};
      set_header_len(b, choices[pick(rng, std::size(choices))]);
    }
  }
  return b;
}

// Opens and loads everything; returns true when it all worked. Anything but il::Error fails.
bool try_load(const std::filesystem::path& path) {
  try {
    auto st = SafeTensors::open(path);
    std::size_t total = 0;
    for (const auto& name : st.names()) {
      const TensorInfo& ti = st.info(name);
      total += st.load_f32(name, ti.shape).size();
    }
    (void)st.total_bytes();
    (void)st.dominant_dtype();
    return total > 0 || st.names().empty();
  } catch (const il::Error&) {
    return false;
  }
}

TEST(Fuzz, SafeTensorsMutations) {
  TempDir dir;
  const auto file = dir / "model.safetensors";
  const std::string base = valid_safetensors();
  write_file(file, base);
  ASSERT_TRUE(try_load(file));
  Rng rng(20240611);
  int ok = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string bytes = mutate_safetensors(base, rng);
    // The validator runs on every mutant in memory; mutants it accepts, and a sample of the
    // rest, also go through a real file, the mmap and every load.
    bool valid = true;
    try {
      (void)detail::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
    } catch (const il::Error&) {
      valid = false;
    }
    if (valid || i % 8 == 0) {
      write_file(file, bytes);
      const bool loaded = try_load(file);
      EXPECT_EQ(loaded, valid) << "iteration " << i;
    }
    (valid ? ok : refused) += 1;
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 1000);
}

TEST(Fuzz, ShardedIndexMutations) {
  TempDir dir;
  write_file(dir / "a.safetensors", valid_safetensors());
  const std::string index =
      json{{"metadata", {{"total_size", 84}}},
           {"weight_map",
            {{"embeddings.word_embeddings.weight", "a.safetensors"}, {"pooler.dense.bias", "a.safetensors"}}}}
          .dump();
  Rng rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s = index;
    mutate_json_text(s, rng);
    write_file(dir / "model.safetensors.index.json", s);
    try_load(dir.path());
  }
}

// Runs fn; true on success, false on il::Error. Anything else propagates and fails the test.
template <typename Fn>
bool accepts(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const il::Error&) {
    return false;
  }
}

// Sets a random top-level field (existing or not) to a hostile value, or drops it.
void mutate_object_field(json& j, const std::vector<std::string>& keys, Rng& rng) {
  const json values[] = {-1,
                         0,
                         1,
                         3,
                         7,
                         2147483647,
                         2147483648LL,
                         json(1ULL << 63),
                         1e-30,
                         1e300,
                         -0.0,
                         nullptr,
                         "",
                         "gelu",
                         "bert",
                         "absolute",
                         "relative_key",
                         true,
                         json::array(),
                         json::object(),
                         json::array({"XForSequenceClassification"}),
                         json{{"0", "a"}}};
  const std::string& key = keys[pick(rng, keys.size())];
  if (pick(rng, 6) == 0)
    j.erase(key);
  else
    j[key] = values[pick(rng, std::size(values))];
}

TEST(Fuzz, ConfigMutations) {
  const json base = json::parse(R"({
    "architectures": ["XLMRobertaForSequenceClassification"], "hidden_act": "gelu", "hidden_size": 64,
    "id2label": {"0": "LABEL_0"}, "intermediate_size": 256, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 130, "model_type": "xlm-roberta", "num_attention_heads": 4,
    "num_hidden_layers": 2, "pad_token_id": 1, "position_embedding_type": "absolute",
    "type_vocab_size": 1, "vocab_size": 1000, "inferencelayer_random_weights": true})");
  std::vector<std::string> keys = {"num_labels"};
  for (auto it = base.begin(); it != base.end(); ++it) keys.push_back(it.key());
  auto check_config = [](const BertConfig& c) {
    ASSERT_GT(c.hidden, 0);
    ASSERT_EQ(c.hidden, c.heads * c.head_dim);
    ASSERT_GT(c.max_tokens_per_sequence(), 0);
    ASSERT_GT(c.layer_norm_eps, 0.0f);
  };
  TempDir dir;
  Rng rng(99);
  int ok = 0;
  for (int i = 0; i < 2000; ++i) {
    if (i % 2 == 0) {  // structured edits, in memory
      json j = base;
      const int edits = 1 + static_cast<int>(pick(rng, 3));
      for (int e = 0; e < edits; ++e) mutate_object_field(j, keys, rng);
      ok += accepts([&] { check_config(parse_bert_config(j, "config.json")); });
    } else if (i % 10 == 1) {  // textual edits through the file reader
      std::string s = base.dump();
      const int edits = 1 + static_cast<int>(pick(rng, 3));
      for (int e = 0; e < edits; ++e) mutate_json_text(s, rng);
      write_file(dir / "config.json", s);
      ok += accepts([&] { check_config(load_bert_config(dir.path())); });
    } else {  // textual edits, parsed here
      std::string s = base.dump();
      mutate_json_text(s, rng);
      const json j = json::parse(s, nullptr, false);
      if (!j.is_discarded()) ok += accepts([&] { check_config(parse_bert_config(j, "config.json")); });
    }
  }
  EXPECT_GT(ok, 50);
}

TEST(Fuzz, SentenceTransformerMutations) {
  const std::string modules = R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  const std::string pool = R"({"word_embedding_dimension": 8, "pooling_mode_cls_token": false,
    "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
    "pooling_mode_mean_sqrt_len_tokens": false, "pooling_mode_weightedmean_tokens": false,
    "pooling_mode_lasttoken": false, "include_prompt": true})";
  const std::string dense = R"({"in_features": 8, "out_features": 4, "bias": true,
    "activation_function": "torch.nn.modules.activation.Tanh"})";
  const std::string prompts = R"({"prompts": {"query": "query: ", "doc": ""}, "default_prompt_name": "query"})";
  const std::string sbert = R"({"max_seq_length": 128, "do_lower_case": false})";
  TempDir dir;
  Rng rng(3);
  int ok = 0;
  const std::string base[5] = {modules, pool, dense, prompts, sbert};
  const std::filesystem::path paths[5] = {dir / "modules.json", dir / "1_Pooling/config.json",
                                          dir / "2_Dense/config.json", dir / "config_sentence_transformers.json",
                                          dir / "sentence_bert_config.json"};
  for (int k = 0; k < 5; ++k) write_file(paths[k], base[k]);
  ASSERT_TRUE(accepts([&] { (void)load_sentence_transformer_info(dir.path()); }));
  for (int i = 0; i < 800; ++i) {
    const std::size_t k = pick(rng, 5);  // mutate one file, then put it back
    std::string s = base[k];
    mutate_json_text(s, rng);
    write_file(paths[k], s);
    ok += accepts([&] { (void)load_sentence_transformer_info(dir.path()); });
    write_file(paths[k], base[k]);
  }
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace il::io
