#include "text/normalizers.h"

#include <optional>
#include <vector>

#include "text/precompiled.h"
#include "text/regex.h"

namespace il::text {
namespace {

using unicode::is_chinese_char;

// BERT's clean_text: \t \n \r count as whitespace, not as controls.
bool is_bert_whitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || unicode::is_whitespace(c);
}

bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  return unicode::is_legacy_other(c);
}

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const JsonRef& j)
      : clean_text_(j.get_bool("clean_text", true)),
        handle_chinese_chars_(j.get_bool("handle_chinese_chars", true)),
        lowercase_(j.get_bool("lowercase", true)) {
    // strip_accents: null follows lowercase.
    strip_accents_ = j.get_bool("strip_accents", lowercase_);
  }

  void normalize(NormalizedString& s) const override {
    if (clean_text_) {
      s.filter([](char32_t c) { return !(c == 0 || c == 0xFFFD || is_bert_control(c)); });
      s.map([](char32_t c) { return is_bert_whitespace(c) ? U' ' : c; });
    }
    if (handle_chinese_chars_) pad_chinese_chars(s);
    if (strip_accents_) {
      s.nfd();
      s.filter([](char32_t c) { return c < 0x300 || !unicode::is_legacy_nonspacing_mark(c); });
    }
    if (lowercase_) s.lowercase();
  }

 private:
  // A space on each side of every CJK ideograph: the one before is inserted (attributed to the
  // preceding character), the ideograph keeps its place, the one after is inserted.
  static void pad_chinese_chars(NormalizedString& s) {
    bool any = false;
    {
      const std::string_view t = s.text();
      std::size_t i = 0;
      while (i < t.size() && !any) {
        if (static_cast<unsigned char>(t[i]) < 0xE3) {
          i += unicode::utf8_length(static_cast<unsigned char>(t[i]));
          continue;
        }
        any = is_chinese_char(unicode::decode_utf8(t, i));
      }
    }
    if (!any) return;
    NormalizedString::Rewriter w(s);
    while (!w.at_end()) {
      const char32_t c = w.peek();
      if (is_chinese_char(c)) {
        w.insert(U' ');
        w.keep();
        w.insert(U' ');
      } else {
        w.keep();
      }
    }
    w.finish();
  }

  bool clean_text_;
  bool handle_chinese_chars_;
  bool lowercase_;
  bool strip_accents_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { s.lowercase(); }
};

class UnicodeForm final : public Normalizer {
 public:
  enum class Form { kNFD, kNFKD, kNFC, kNFKC };
  explicit UnicodeForm(Form form) : form_(form) {}
  void normalize(NormalizedString& s) const override {
    switch (form_) {
      case Form::kNFD: s.nfd(); break;
      case Form::kNFKD: s.nfkd(); break;
      case Form::kNFC: s.nfc(); break;
      case Form::kNFKC: s.nfkc(); break;
    }
  }

 private:
  Form form_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    s.filter([](char32_t c) { return c < 0x300 || !unicode::is_legacy_combining_mark(c); });
  }
};

class Strip final : public Normalizer {
 public:
  explicit Strip(const JsonRef& j)
      : left_(j.get_bool("strip_left", true)), right_(j.get_bool("strip_right", true)) {}
  void normalize(NormalizedString& s) const override { s.strip(left_, right_); }

 private:
  bool left_;
  bool right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(const JsonRef& j) : prepend_(j["prepend"].as_string()) {}
  void normalize(NormalizedString& s) const override { s.prepend(prepend_); }

 private:
  std::string prepend_;
};

// Replaces every match of a pattern by `content`. As in the library, the replacement characters
// are attributed to the last character of the match they replace (so a token made of them maps
// back onto the matched text), and the text between matches keeps its alignments.
class Replace final : public Normalizer {
 public:
  explicit Replace(const JsonRef& j)
      : regex_(pattern_from_json(j["pattern"])), content_(j["content"].as_string()) {}

  void normalize(NormalizedString& s) const override {
    if (s.text().empty()) return;
    // Rewrites as the matches are found (the text the pattern reads only changes at finish());
    // the rewrite starts at the first match, so text without one is left as it is.
    struct Apply final : PieceSink {
      NormalizedString& s;
      const std::string& content;
      std::optional<NormalizedString::Rewriter> w;
      uint32_t before_begin = 0;  // the text before the first match
      uint32_t before_end = 0;

      Apply(NormalizedString& str, const std::string& c) : s(str), content(c) {}
      std::size_t chars(uint32_t begin, uint32_t end) const {
        return unicode::count_chars(std::string_view(s.text()).substr(begin, end - begin));
      }
      void add(uint32_t begin, uint32_t end, bool is_match) override {
        if (!is_match) {
          if (!w) {
            before_begin = begin;
            before_end = end;
            return;
          }
          for (std::size_t k = chars(begin, end); k > 0; --k) w->keep();
          return;
        }
        if (!w) {
          w.emplace(s);
          for (std::size_t k = chars(before_begin, before_end); k > 0; --k) w->keep();
        }
        w->skip(chars(begin, end));
        std::size_t i = 0;
        while (i < content.size()) w->insert(unicode::decode_utf8(content, i));
      }
    } apply(s, content_);
    regex_.find_matches(s.text(), apply);
    if (apply.w) apply.w->finish();
  }

 private:
  Regex regex_;
  std::string content_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(const JsonRef& j) {
    const JsonRef list = j["normalizers"];
    for (std::size_t i = 0; i < list.size(); ++i) parts_.push_back(make_normalizer(list.at(i)));
  }
  void normalize(NormalizedString& s) const override {
    for (const auto& n : parts_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonRef& j) {
  const std::string t = j.type({"BertNormalizer", "Lowercase", "NFD", "NFKD", "NFC", "NFKC",
                                "StripAccents", "Strip", "Prepend", "Replace", "Precompiled",
                                "Sequence"});
  using Form = UnicodeForm::Form;
  if (t == "BertNormalizer") return std::make_unique<BertNormalizer>(j);
  if (t == "Lowercase") return std::make_unique<Lowercase>();
  if (t == "NFD") return std::make_unique<UnicodeForm>(Form::kNFD);
  if (t == "NFKD") return std::make_unique<UnicodeForm>(Form::kNFKD);
  if (t == "NFC") return std::make_unique<UnicodeForm>(Form::kNFC);
  if (t == "NFKC") return std::make_unique<UnicodeForm>(Form::kNFKC);
  if (t == "StripAccents") return std::make_unique<StripAccents>();
  if (t == "Strip") return std::make_unique<Strip>(j);
  if (t == "Prepend") return std::make_unique<Prepend>(j);
  if (t == "Replace") return std::make_unique<Replace>(j);
  if (t == "Precompiled") return make_precompiled_normalizer(j);
  return std::make_unique<SequenceNormalizer>(j);
}

}  // namespace il::text
