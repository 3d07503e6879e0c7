#include "text/siglip_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"
#include "io/regular_file.h"
#include "text/unicode.h"

namespace il::text {
namespace {

constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) out.push_back(unicode::decode_utf8(s, i));
  return out;
}

std::string utf8(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t c : cps) unicode::append_utf8(out, c);
  return out;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

// Unicode's Cased (Lowercase, Uppercase or titlecase letters; Other_Lowercase / Other_Uppercase
// approximated by their letters' categories).
bool is_cased(char32_t c) {
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

// Unicode's Case_Ignorable: marks, format characters, modifier letters and symbols, and the
// word-break MidLetter / MidNumLet / Single_Quote characters.
bool is_case_ignorable(char32_t c) {
  switch (c) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4: case 0x2018:
    case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07: case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      break;
  }
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK;
}

bool is_ascii_punctuation(char32_t c) { return c < 0x80 && unicode::is_ascii_punctuation(c); }

// SigLIP's canonicalize_text: lowercase (when configured), ASCII punctuation deleted, runs of
// whitespace made one space, stripped.
std::string canonicalize(std::string_view part, bool lowercase) {
  const std::string lowered = lowercase ? python_lower(part) : std::string(part);
  std::vector<char32_t> out;
  bool in_space = false;
  for (char32_t c : code_points(lowered)) {
    if (is_ascii_punctuation(c)) continue;
    if (is_python_space(c)) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(U' ');
    in_space = false;
    out.push_back(c);
  }
  return utf8(out);
}

std::string_view strip_left(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i;
    if (!is_python_space(unicode::decode_utf8(s, j))) break;
    i = j;
  }
  return s.substr(i);
}

std::string_view strip_right(std::string_view s) {
  std::size_t end = s.size();
  while (end > 0) {
    std::size_t begin = 0;
    if (!is_python_space(unicode::decode_utf8_before(s, end, &begin))) break;
    end = begin;
  }
  return s.substr(0, end);
}

// il::Error for text that is not UTF-8, with text::Tokenizer's message: everything after works on
// whole code points.
void check_utf8(std::string_view text) {
  if (const auto bad = unicode::find_invalid_utf8(text))
    throw make_error("tokenizer: the text is not valid UTF-8 (byte ", *bad, " of ", text.size(), ")");
}

}  // namespace

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string python_lower(std::string_view text) {
  const std::vector<char32_t> cps = code_points(text);
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    if (cps[i] == 0x3A3) {
      // Final_Sigma: a cased letter before (case-ignorable ones skipped), none after.
      std::size_t j = i;
      while (j > 0 && is_case_ignorable(cps[j - 1])) --j;
      bool final_sigma = j > 0 && is_cased(cps[j - 1]);
      if (final_sigma) {
        std::size_t k = i + 1;
        while (k < cps.size() && is_case_ignorable(cps[k])) ++k;
        final_sigma = k == cps.size() || !is_cased(cps[k]);
      }
      out.push_back(final_sigma ? 0x3C2 : 0x3C3);
      continue;
    }
    char32_t lowered[3];
    const int n = unicode::to_lowercase(cps[i], lowered);
    out.insert(out.end(), lowered, lowered + n);
  }
  return utf8(out);
}

SiglipSpmTokenizer::SiglipSpmTokenizer(SentencePieceEncoder encoder, bool lowercase, std::size_t max_length,
                                       const std::string& source)
    : encoder_(std::move(encoder)), lowercase_(lowercase), max_length_(max_length) {
  const auto id = [&](std::string_view piece) {
    const std::optional<int32_t> i = encoder_.piece_id(piece);
    check(i.has_value(), source, ": the model has no piece \"", std::string(piece), "\"");
    return *i;
  };
  eos_ = id("</s>");
  unk_ = id("<unk>");
  pad_ = eos_;  // SiglipTokenizer pads with "</s>"
  space_piece_ = encoder_.piece_id(kSpaceSymbol).value_or(-1);
  check(max_length_ >= 1, source, ": model_max_length must be at least 1");
  unk_pieces_ = encoder_.encode("<unk>").size();
}

SiglipSpmTokenizer SiglipSpmTokenizer::load(const std::filesystem::path& folder) {
  const std::filesystem::path model = folder / "spiece.model";
  const std::string source = model.string();
  SentencePieceEncoder encoder(parse_sentencepiece_model(io::read_regular_file(model), source), source);
  bool lowercase = true;
  std::size_t max_length = 64;
  const std::filesystem::path config = folder / "tokenizer_config.json";
  if (std::filesystem::exists(config)) {
    const nlohmann::json j = io::read_json_file(config);
    check(j.is_object(), config.string(), ": expected a JSON object");
    if (const auto it = j.find("do_lower_case"); it != j.end() && !it->is_null()) {
      check(it->is_boolean(), config.string(), ": field \"do_lower_case\" must be true or false");
      lowercase = it->get<bool>();
    }
    // transformers saves a placeholder of 1e30 for "no limit": kept as a million (the engine cuts
    // texts at the model's positions in any case).
    if (const auto it = j.find("model_max_length"); it != j.end() && !it->is_null()) {
      check(it->is_number() && it->get<double>() >= 1, config.string(),
            ": field \"model_max_length\" must be a number of at least 1, got ", io::describe_json(*it));
      max_length = static_cast<std::size_t>(std::min(it->get<double>(), 1e6));
    }
    for (const char* key : {"eos_token", "pad_token", "unk_token"})
      if (const auto it = j.find(key); it != j.end() && it->is_string()) {
        const std::string want = std::string(key) == "unk_token" ? "<unk>" : "</s>";
        check(it->get<std::string>() == want, config.string(), ": field \"", key, "\" = \"", it->get<std::string>(),
              "\" is not supported (SiglipTokenizer's \"", want, "\")");
      }
  }
  return SiglipSpmTokenizer(std::move(encoder), lowercase, max_length, source);
}

std::vector<int32_t> SiglipSpmTokenizer::part_ids(std::string_view part) const {
  const std::string text = canonicalize(part, lowercase_);
  std::vector<int32_t> ids = encoder_.encode("<unk>" + text);
  if (ids.size() >= unk_pieces_) ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(unk_pieces_));
  return ids;
}

std::vector<int32_t> SiglipSpmTokenizer::tokens(std::string_view text) const {
  check_utf8(text);
  std::string s(kSpaceSymbol);
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpaceSymbol.size()) == kSpaceSymbol) {
      s += ' ';
      i += kSpaceSymbol.size();
    } else {
      s += text[i++];
    }
  }
  // The parts between special tokens, and the specials; each special strips the whitespace on
  // both of its sides (lstrip and rstrip).
  struct Part {
    std::string_view text;
    int32_t special = -1;
  };
  std::vector<Part> parts;
  std::string_view rest = s;
  while (!rest.empty()) {
    const std::size_t eos_at = rest.find("</s>"), unk_at = rest.find("<unk>");
    const std::size_t at = std::min(eos_at, unk_at);
    if (at == std::string_view::npos) {
      parts.push_back({rest});
      break;
    }
    const bool eos = at == eos_at;
    parts.push_back({rest.substr(0, at)});
    parts.push_back({rest.substr(at, eos ? 4 : 5), eos ? eos_ : unk_});
    rest.remove_prefix(at + (eos ? 4 : 5));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].special < 0) continue;
    if (i + 1 < parts.size() && parts[i + 1].special < 0) parts[i + 1].text = strip_left(parts[i + 1].text);
    if (i > 0 && parts[i - 1].special < 0) parts[i - 1].text = strip_right(parts[i - 1].text);
  }
  std::vector<int32_t> ids;
  std::vector<bool> special;
  for (const Part& p : parts) {
    if (p.special >= 0) {
      ids.push_back(p.special);
      special.push_back(true);
    } else if (!p.text.empty()) {
      for (int32_t id : part_ids(p.text)) {
        ids.push_back(id);
        special.push_back(false);
      }
    }
  }
  // A lone "▁" piece before a special token is dropped.
  if (ids.size() > 1 && ids[0] == space_piece_ && !special[0] && special[1]) ids.erase(ids.begin());
  return ids;
}

std::vector<int32_t> SiglipSpmTokenizer::encode(std::string_view text, bool add_eos) const {
  std::vector<int32_t> ids = tokens(text);
  if (add_eos && (ids.empty() || ids.back() != eos_)) ids.push_back(eos_);
  return ids;
}

std::vector<int32_t> SiglipSpmTokenizer::encode_truncated(std::string_view text, std::size_t max_length, bool add_eos,
                                                          bool from_left) const {
  return truncate(tokens(text), max_length, add_eos, from_left);
}

std::vector<int32_t> SiglipSpmTokenizer::truncate(std::vector<int32_t> ids, std::size_t max_length, bool add_eos,
                                                  bool from_left) const {
  check(max_length >= (add_eos ? 1u : 0u), "a SigLIP text cut to ", max_length, " tokens has no room for \"</s>\"");
  // transformers counts one special token to add (the "</s>"), cuts the text's ids by what the
  // total overflows, then appends "</s>" unless the cut ids end with it.
  const std::size_t room = add_eos ? max_length - 1 : max_length;
  if (ids.size() + (add_eos ? 1 : 0) > max_length) {
    const auto cut = static_cast<std::ptrdiff_t>(ids.size() - room);
    if (from_left) {
      ids.erase(ids.begin(), ids.begin() + cut);
    } else {
      ids.resize(room);
    }
  }
  if (add_eos && (ids.empty() || ids.back() != eos_)) ids.push_back(eos_);
  return ids;
}

std::vector<int32_t> SiglipSpmTokenizer::encode_padded(std::string_view text) const {
  std::vector<int32_t> ids = encode_truncated(text, max_length_);
  ids.resize(max_length_, pad_);
  return ids;
}

std::string_view SiglipSpmTokenizer::piece(int32_t id) const {
  const auto& pieces = encoder_.model().pieces;
  if (id < 0 || static_cast<std::size_t>(id) >= pieces.size()) return {};
  return pieces[static_cast<std::size_t>(id)].text;
}

}  // namespace il::text
