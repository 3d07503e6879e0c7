// Conformance with the Hugging Face tokenizers library itself: tools/tokenizer_oracle fetches real
// tokenizer.json files (Qwen3, Gemma 3, Llama 3, Claude) and builds variants with the library
// (its official Node binding, npm `tokenizers`), encodes tests/text/corpus/*.jsonl with them,
// and this test requires our tokenizer to give the same ids, type ids, offsets, special-token
// masks, sequence ids and decoded text, with and without truncation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<json> read_jsonl(const fs::path& p) {
  std::ifstream in(p);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::ostringstream q;
  q << '\'';
  for (char c : s) {
    if (c == '\'') {
      q << "'\\''";
    } else {
      q << c;
    }
  }
  q << '\'';
  return q.str();
}

template <typename T>
std::string show(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << +v[i];
  return os.str() + "]";
}

std::string show(const std::vector<std::pair<uint32_t, uint32_t>>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    os << (i ? "," : "") << "[" << v[i].first << "," << v[i].second << "]";
  }
  return os.str() + "]";
}

il::text::EncodeOptions options_for(const json& line, const json& trunc) {
  il::text::EncodeOptions o;
  o.add_special_tokens = line.value("add_special_tokens", true);
  if (!trunc.is_null()) {
    o.max_length = trunc["maxLength"].get<std::size_t>();
    const std::string s = trunc["strategy"];
    o.strategy = s == "OnlyFirst"    ? il::text::TruncationStrategy::kOnlyFirst
                 : s == "OnlySecond" ? il::text::TruncationStrategy::kOnlySecond
                                     : il::text::TruncationStrategy::kLongestFirst;
    o.direction = trunc["direction"] == "Left" ? il::text::TruncationDirection::kLeft
                                               : il::text::TruncationDirection::kRight;
  }
  return o;
}

// Each tokenizer.json is loaded once for all its runs (the large ones take a while).
const il::text::Tokenizer& load_once(const std::string& path) {
  static std::map<std::string, il::text::Tokenizer> loaded;
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    it = loaded.emplace(path, il::text::Tokenizer::from_file(path)).first;
  }
  return it->second;
}

// Compares one oracle run; returns the number of mismatching lines (printing the first few).
int compare_run(const json& run) {
  const auto& tok = load_once(run["tokenizer"].get<std::string>());
  const auto corpus = read_jsonl(run["corpus"].get<std::string>());
  const auto oracle = read_jsonl(run["oracle"].get<std::string>());
  EXPECT_EQ(corpus.size(), oracle.size()) << run["oracle"];
  const std::string name = fs::path(run["oracle"].get<std::string>()).filename().string();
  int bad = 0;
  for (std::size_t i = 0; i < std::min(corpus.size(), oracle.size()); ++i) {
    const json& in = corpus[i];
    const json& want = oracle[i];
    const auto opts = options_for(in, run["truncation"]);
    const std::string text = in["text"];
    const bool pair = in.contains("pair");
    std::ostringstream why;
    try {
      const auto got = pair ? tok.encode_pair(text, in["pair"].get<std::string>(), opts)
                            : tok.encode(text, opts);
      if (want.contains("error")) {
        why << "the library refuses (" << want["error"] << ") but we encode "
            << show(got.ids);
      } else {
        const auto ids = want["ids"].get<std::vector<int32_t>>();
        const auto type_ids = want["type_ids"].get<std::vector<int32_t>>();
        const auto offsets = want["offsets"].get<std::vector<std::pair<uint32_t, uint32_t>>>();
        const auto mask = want["special_tokens_mask"].get<std::vector<uint8_t>>();
        const auto seq = want["sequence_ids"].get<std::vector<int8_t>>();
        if (got.ids != ids) why << "ids " << show(got.ids) << " want " << show(ids) << "; ";
        if (got.type_ids != type_ids) {
          why << "type_ids " << show(got.type_ids) << " want " << show(type_ids) << "; ";
        }
        if (got.offsets != offsets) {
          why << "offsets " << show(got.offsets) << " want " << show(offsets) << "; ";
        }
        if (got.special_tokens_mask != mask) {
          why << "special mask " << show(got.special_tokens_mask) << " want " << show(mask)
              << "; ";
        }
        if (got.sequence_ids != seq) {
          why << "sequence ids " << show(got.sequence_ids) << " want " << show(seq) << "; ";
        }
        const std::string dec = tok.decode(ids, true);
        const std::string dec_all = tok.decode(ids, false);
        if (dec != want["decoded"]) {
          why << "decode " << json(dec).dump() << " want " << want["decoded"].dump() << "; ";
        }
        if (dec_all != want["decoded_with_special"]) {
          why << "decode(keep special) " << json(dec_all).dump() << " want "
              << want["decoded_with_special"].dump() << "; ";
        }
        if (!why.str().empty()) why << "tokens " << want["tokens"].dump();
      }
    } catch (const il::Error& e) {
      if (!want.contains("error")) why << "we throw: " << e.what();
    }
    if (!why.str().empty()) {
      if (++bad <= 8) {
        ADD_FAILURE() << name << " line " << i + 1 << " " << in.dump() << "\n  " << why.str();
      }
    }
  }
  if (bad > 8) ADD_FAILURE() << name << ": " << bad << " mismatching lines in all";
  return bad;
}

}  // namespace

TEST(TokenizerConformance, MatchesHuggingFaceLibrary) {
  // ctest sets IL_SOURCE_DIR; a binary run by hand falls back to the tree it was built from.
  const char* src = std::getenv("IL_SOURCE_DIR");
  const fs::path root(src != nullptr ? src : IL_TEXT_SOURCE_DIR);
  const fs::path oracle_dir = root / "tools" / "tokenizer_oracle";
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::string(ci) == "true";
  if (!fs::exists(oracle_dir / "node_modules" / "tokenizers" / "package.json")) {
    if (in_ci) {
      FAIL() << "the tokenizer oracle is not installed (" << (oracle_dir / "node_modules")
             << " is missing): run `npm ci --prefix tools/tokenizer_oracle` before the tests";
    }
    GTEST_SKIP() << "tokenizer conformance skipped: the Hugging Face tokenizers oracle is not "
                    "installed; run `npm ci --prefix tools/tokenizer_oracle` to enable it";
  }
  const fs::path work = IL_TEXT_ORACLE_WORK;
  fs::create_directories(work);
  std::vector<std::string> corpora;
  for (const auto& entry : fs::directory_iterator(root / "tests" / "text" / "corpus")) {
    if (entry.path().extension() == ".jsonl") corpora.push_back(entry.path().string());
  }
  std::sort(corpora.begin(), corpora.end());
  std::ostringstream cmd;
  cmd << "node " << shell_quote((oracle_dir / "run_conformance.js").string()) << ' '
      << shell_quote(work.string());
  for (const auto& c : corpora) cmd << ' ' << shell_quote(c);
  ASSERT_EQ(std::system(cmd.str().c_str()), 0) << "the tokenizer oracle failed: " << cmd.str();

  std::ifstream in(work / "manifest.json");
  const json manifest = json::parse(in);
  ASSERT_FALSE(manifest["runs"].empty());
  int bad_runs = 0;
  for (const json& run : manifest["runs"]) bad_runs += compare_run(run) > 0;
  EXPECT_EQ(bad_runs, 0) << "of " << manifest["runs"].size() << " oracle runs";
}
