#include "text/post_processors.h"

#include <map>
#include <string>

#include "text/unicode.h"

namespace il::text {
namespace {

using Offsets = std::pair<uint32_t, uint32_t>;

void set_type_ids(TokenSequence& s, int32_t type_id) {
  s.type_ids.assign(s.size(), type_id);
}

bool is_byte_level_space(char32_t c) { return c == 0x120 || unicode::is_whitespace(c); }

// The byte-level offset trimming (ByteLevel and RobertaProcessing with trim_offsets): leading and
// trailing spaces of a token (the byte-level space 'Ġ' or real whitespace) leave its offsets,
// except one leading space of the first token when the pre-tokenizer added it. The library
// counts characters, so the offsets move by characters of the token's sequence text.
void trim_offsets(TokenSequence& s, bool add_prefix_space,
                  std::span<const std::string_view> texts) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const int8_t seq = s.sequence_ids[i];
    if (seq < 0 || static_cast<std::size_t>(seq) >= texts.size()) continue;  // special token
    const std::string_view text = texts[static_cast<std::size_t>(seq)];
    std::size_t leading = s.spaces[i].first;
    const std::size_t trailing = s.spaces[i].second;
    if (leading == 0 && trailing == 0) continue;
    Offsets& o = s.offsets[i];
    if (leading > 0) {
      const bool is_first = i == 0 || o.first == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      std::size_t b = o.first;
      for (std::size_t k = 0; k < leading && b < o.second; ++k) {
        b += unicode::utf8_length(static_cast<unsigned char>(text[b]));
      }
      o.first = static_cast<uint32_t>(std::min<std::size_t>(b, o.second));
    }
    if (trailing > 0) {
      std::size_t b = o.second;
      std::size_t k = 0;
      for (; k < trailing && b > 0; ++k) unicode::decode_utf8_before(text, b, &b);
      if (k == trailing) o.second = static_cast<uint32_t>(std::max<std::size_t>(b, o.first));
    }
  }
}

class TemplateProcessing final : public PostProcessor {
 public:
  explicit TemplateProcessing(const JsonRef& j) {
    const JsonRef specials = j["special_tokens"];
    specials.expect_object();
    for (const auto& [name, value] : specials.value().items()) {
      const JsonRef ref(j.source(), value, specials.path() + "[\"" + name + "\"]");
      Special sp;
      const JsonRef ids = ref["ids"];
      const JsonRef tokens = ref["tokens"];
      if (ids.size() != tokens.size()) ref.fail("has ids and tokens of different lengths");
      for (std::size_t i = 0; i < ids.size(); ++i) {
        sp.ids.push_back(static_cast<int32_t>(ids.at(i).as_int(0, INT32_MAX)));
        tokens.at(i).as_string();  // checked; the engine reports ids, not token strings
      }
      specials_.emplace(name, std::move(sp));
    }
    single_ = parse_template(j["single"], false);
    pair_ = parse_template(j["pair"], true);
  }

  std::size_t added_tokens(bool pair) const override {
    std::size_t n = 0;
    for (const Piece& p : pair ? pair_ : single_) n += p.special ? p.special->ids.size() : 0;
    return n;
  }

  void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
               std::span<const std::string_view>) const override {
    const auto& tmpl = seqs.size() == 2 ? pair_ : single_;
    // A sequence is moved into its last place in the template and copied into the others.
    std::size_t last_use[2] = {0, 0};
    for (std::size_t k = 0; k < tmpl.size(); ++k) {
      if (tmpl[k].special == nullptr) last_use[tmpl[k].sequence] = k;
    }
    std::vector<TokenSequence> out;
    out.reserve(tmpl.size());
    for (std::size_t k = 0; k < tmpl.size(); ++k) {
      const Piece& p = tmpl[k];
      if (p.special == nullptr) {
        TokenSequence s = last_use[p.sequence] == k ? std::move(seqs[p.sequence])
                                                    : TokenSequence(seqs[p.sequence]);
        set_type_ids(s, p.type_id);
        s.sequence_ids.assign(s.size(), static_cast<int8_t>(p.sequence));
        out.push_back(std::move(s));
      } else if (add_special_tokens) {
        TokenSequence s;
        for (const int32_t id : p.special->ids) s.push(id, p.type_id, {0, 0}, 1, -1);
        out.push_back(std::move(s));
      }
    }
    seqs.swap(out);
  }

 private:
  struct Special {
    std::vector<int32_t> ids;
  };
  struct Piece {
    const Special* special = nullptr;  // null: a sequence
    int sequence = 0;                  // 0 = $A, 1 = $B
    int32_t type_id = 0;
  };

  // One piece as the library's Piece::try_from reads a template string: "$A", "$B:1", "$1",
  // "[CLS]", "[SEP]:1".
  Piece parse_piece_string(const JsonRef& ref, const std::string& s) const {
    std::string id = s;
    int64_t type_id = 0;
    bool typed = false;
    if (const auto colon = s.find(':'); colon != std::string::npos) {
      id = s.substr(0, colon);
      const std::string t = s.substr(colon + 1);
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 9) {
        ref.fail("\"" + s + "\" is not a template piece");
      }
      type_id = std::stoll(t);
      typed = true;
    }
    Piece p;
    if (!id.empty() && id[0] == '$') {
      const std::string rest = id.substr(1);
      if (rest.empty() || rest == "A" || rest == "a") {
        p.sequence = 0;
      } else if (rest == "B" || rest == "b") {
        p.sequence = 1;
      } else if (rest.find_first_not_of("0123456789") == std::string::npos && rest.size() < 10) {
        p.sequence = 0;
        if (!typed) type_id = std::stoll(rest);
      } else {
        ref.fail("\"" + s + "\" is not a template piece");
      }
    } else {
      p.special = find_special(ref, id);
    }
    p.type_id = static_cast<int32_t>(type_id);
    return p;
  }

  const Special* find_special(const JsonRef& ref, const std::string& id) const {
    const auto it = specials_.find(id);
    if (it == specials_.end()) {
      ref.fail("uses the special token \"" + id + "\", which special_tokens does not define");
    }
    return &it->second;
  }

  std::vector<Piece> parse_template(const JsonRef& list, bool pair) const {
    std::vector<Piece> pieces;
    if (list.value().is_string()) {
      // A template string, split on spaces.
      const std::string s = list.as_string();
      std::size_t b = 0;
      while (b <= s.size()) {
        const std::size_t e = std::min(s.find(' ', b), s.size());
        pieces.push_back(parse_piece_string(list, s.substr(b, e - b)));
        b = e + 1;
      }
    } else {
      for (std::size_t i = 0; i < list.size(); ++i) {
        const JsonRef item = list.at(i);
        if (item.value().is_string()) {
          pieces.push_back(parse_piece_string(item, item.as_string()));
        } else if (const auto seq = item.find("Sequence")) {
          Piece p;
          const std::string id = (*seq)["id"].as_string();
          if (id != "A" && id != "B") (*seq)["id"].fail("must be \"A\" or \"B\"");
          p.sequence = id == "A" ? 0 : 1;
          p.type_id = static_cast<int32_t>((*seq)["type_id"].as_int(0, INT32_MAX));
          pieces.push_back(p);
        } else if (const auto sp = item.find("SpecialToken")) {
          Piece p;
          p.special = find_special((*sp)["id"], (*sp)["id"].as_string());
          p.type_id = static_cast<int32_t>((*sp)["type_id"].as_int(0, INT32_MAX));
          pieces.push_back(p);
        } else {
          item.fail("must hold \"Sequence\" or \"SpecialToken\"");
        }
      }
    }
    bool has_a = false;
    bool has_b = false;
    for (const Piece& p : pieces) {
      if (p.special == nullptr) (p.sequence == 0 ? has_a : has_b) = true;
    }
    if (pair && !(has_a && has_b)) list.fail("must use both sequences $A and $B");
    if (!pair && has_b) list.fail("must not use the pair sequence $B");
    return pieces;
  }

  std::map<std::string, Special, std::less<>> specials_;
  std::vector<Piece> single_;
  std::vector<Piece> pair_;
};

// "sep": ["[SEP]", 102]
std::pair<std::string, int32_t> parse_token_pair(const JsonRef& j) {
  if (j.size() != 2) j.fail("must be [token, id]");
  return {j.at(0).as_string(), static_cast<int32_t>(j.at(1).as_int(0, INT32_MAX))};
}

class BertProcessing final : public PostProcessor {
 public:
  explicit BertProcessing(const JsonRef& j)
      : sep_(parse_token_pair(j["sep"])), cls_(parse_token_pair(j["cls"])) {}

  std::size_t added_tokens(bool pair) const override { return pair ? 3 : 2; }

  void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
               std::span<const std::string_view>) const override {
    if (!add_special_tokens) return;
    std::vector<TokenSequence> out;
    TokenSequence cls;
    cls.push(cls_.second, 0, {0, 0}, 1, -1);
    out.push_back(std::move(cls));
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      out.push_back(std::move(seqs[i]));
      TokenSequence sep;
      sep.push(sep_.second, i == 0 ? 0 : 1, {0, 0}, 1, -1);
      out.push_back(std::move(sep));
    }
    seqs.swap(out);
  }

 private:
  std::pair<std::string, int32_t> sep_;
  std::pair<std::string, int32_t> cls_;
};

class RobertaProcessing final : public PostProcessor {
 public:
  explicit RobertaProcessing(const JsonRef& j)
      : sep_(parse_token_pair(j["sep"])),
        cls_(parse_token_pair(j["cls"])),
        trim_offsets_(j.get_bool("trim_offsets", true)),
        add_prefix_space_(j.get_bool("add_prefix_space", true)) {}

  std::size_t added_tokens(bool pair) const override { return pair ? 4 : 2; }
  bool trims_offsets() const override { return trim_offsets_; }

  void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
               std::span<const std::string_view> texts) const override {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (trim_offsets_) trim_offsets(seqs[i], add_prefix_space_, texts);
      set_type_ids(seqs[i], 0);  // RoBERTa has a single type id
    }
    if (!add_special_tokens) return;
    std::vector<TokenSequence> out;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      TokenSequence open;
      open.push(i == 0 ? cls_.second : sep_.second, 0, {0, 0}, 1, -1);
      out.push_back(std::move(open));
      out.push_back(std::move(seqs[i]));
      TokenSequence close;
      close.push(sep_.second, 0, {0, 0}, 1, -1);
      out.push_back(std::move(close));
    }
    seqs.swap(out);
  }

 private:
  std::pair<std::string, int32_t> sep_;
  std::pair<std::string, int32_t> cls_;
  bool trim_offsets_;
  bool add_prefix_space_;
};

class ByteLevelProcessing final : public PostProcessor {
 public:
  explicit ByteLevelProcessing(const JsonRef& j)
      : trim_offsets_(j.get_bool("trim_offsets", true)),
        add_prefix_space_(j.get_bool("add_prefix_space", true)) {}

  std::size_t added_tokens(bool) const override { return 0; }
  bool trims_offsets() const override { return trim_offsets_; }

  void process(std::vector<TokenSequence>& seqs, bool,
               std::span<const std::string_view> texts) const override {
    if (!trim_offsets_) return;
    for (TokenSequence& s : seqs) trim_offsets(s, add_prefix_space_, texts);
  }

 private:
  bool trim_offsets_;
  bool add_prefix_space_;
};

class SequenceProcessing final : public PostProcessor {
 public:
  explicit SequenceProcessing(const JsonRef& j) {
    const JsonRef list = j["processors"];
    for (std::size_t i = 0; i < list.size(); ++i) parts_.push_back(make_post_processor(list.at(i)));
  }

  std::size_t added_tokens(bool pair) const override {
    std::size_t n = 0;
    for (const auto& p : parts_) n += p->added_tokens(pair);
    return n;
  }

  bool trims_offsets() const override {
    for (const auto& p : parts_) {
      if (p->trims_offsets()) return true;
    }
    return false;
  }

  void process(std::vector<TokenSequence>& seqs, bool add_special_tokens,
               std::span<const std::string_view> texts) const override {
    for (const auto& p : parts_) p->process(seqs, add_special_tokens, texts);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

}  // namespace

std::pair<uint32_t, uint32_t> byte_level_spaces(std::string_view token) {
  uint32_t leading = 0;
  std::size_t p = 0;
  while (p < token.size() && is_byte_level_space(unicode::decode_utf8(token, p))) ++leading;
  uint32_t trailing = 0;
  std::size_t e = token.size();
  while (e > 0 && is_byte_level_space(unicode::decode_utf8_before(token, e, &e))) ++trailing;
  return {leading, trailing};
}

std::unique_ptr<PostProcessor> make_post_processor(const JsonRef& j) {
  const std::string t = j.type(
      {"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"});
  if (t == "TemplateProcessing") return std::make_unique<TemplateProcessing>(j);
  if (t == "BertProcessing") return std::make_unique<BertProcessing>(j);
  if (t == "RobertaProcessing") return std::make_unique<RobertaProcessing>(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevelProcessing>(j);
  return std::make_unique<SequenceProcessing>(j);
}

}  // namespace il::text
