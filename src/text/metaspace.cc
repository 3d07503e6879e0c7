#include "text/metaspace.h"

#include <string>

#include "text/unicode.h"

namespace il::text {
namespace {

enum class PrependScheme { kFirst, kNever, kAlways };

// The settings both halves read, with the library's checks.
struct MetaspaceSettings {
  char32_t replacement = U'\u2581';
  std::string replacement_utf8;
  PrependScheme prepend = PrependScheme::kAlways;
  bool split = true;

  explicit MetaspaceSettings(const JsonRef& j) {
    const JsonRef r = j["replacement"];
    const std::string s = r.as_string();
    if (s.empty() || unicode::count_chars(s) != 1) {
      r.fail("must be exactly one character, not \"" + s + "\"");
    }
    std::size_t i = 0;
    replacement = unicode::decode_utf8(s, i);
    replacement_utf8 = s;
    if (const auto p = j.find("prepend_scheme")) {
      const std::string v = p->as_string();
      if (v == "first") {
        prepend = PrependScheme::kFirst;
      } else if (v == "never") {
        prepend = PrependScheme::kNever;
      } else if (v == "always") {
        prepend = PrependScheme::kAlways;
      } else {
        p->fail("\"" + v + "\" is not supported (supported: first, never, always)");
      }
    }
    // Files from before prepend_scheme say add_prefix_space. false must come with "never": the
    // library refuses it next to any other scheme, the default "always" included.
    if (const auto a = j.find("add_prefix_space"); a && !a->as_bool()) {
      if (prepend != PrependScheme::kNever) {
        a->fail("is false, which does not match prepend_scheme \"" +
                std::string(prepend == PrependScheme::kFirst ? "first" : "always") + "\"");
      }
    }
    if (const auto s2 = j.find("split")) split = s2->as_bool();
    if (const auto rep = j.find("str_rep")) rep->as_string();  // old files; unused
  }
};

// Spaces become the replacement (attributed to the space); the prepended one is attributed to
// the first character, as the library's prepend() does.
class MetaspaceRewrite final : public SplitRewrite {
 public:
  explicit MetaspaceRewrite(const JsonRef& j) : m_(j) {}

  void rewrite(std::string_view text, std::span<const Alignment> align, std::string& out,
               std::vector<Alignment>& out_align) const override {
    if (text.empty()) return;
    bool prepend = false;
    if (m_.prepend != PrependScheme::kNever) {
      // The test looks at the text after the spaces became replacements.
      std::size_t i = 0;
      const char32_t first = unicode::decode_utf8(text, i);
      const bool starts_with_replacement = first == U' ' || first == m_.replacement;
      // "first": only the split that starts the sequence's text (the library's
      // offsets_original().0 == 0).
      prepend = !starts_with_replacement &&
                (m_.prepend == PrependScheme::kAlways || align[0].begin == 0);
    }
    if (prepend) append(m_.replacement_utf8, align[0], out, out_align);
    std::size_t start = 0;  // of the bytes not written yet
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] != ' ') continue;
      out.append(text, start, i - start);
      out_align.insert(out_align.end(), align.begin() + static_cast<std::ptrdiff_t>(start),
                       align.begin() + static_cast<std::ptrdiff_t>(i));
      append(m_.replacement_utf8, align[i], out, out_align);
      start = i + 1;
    }
    out.append(text, start, text.size() - start);
    out_align.insert(out_align.end(), align.begin() + static_cast<std::ptrdiff_t>(start),
                     align.end());
  }

  const MetaspaceSettings& settings() const { return m_; }

 private:
  static void append(std::string_view s, Alignment a, std::string& out,
                     std::vector<Alignment>& out_align) {
    out.append(s);
    out_align.insert(out_align.end(), s.size(), a);
  }

  MetaspaceSettings m_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(const JsonRef& j) : m_(j) {}

  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string out;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      const std::string& token = tokens[t];
      if (token.find(m_.replacement_utf8) == std::string::npos) continue;
      // The first token loses its replacement characters unless nothing was prepended.
      const bool drop = t == 0 && m_.prepend != PrependScheme::kNever;
      out.clear();
      std::size_t i = 0;
      while (i < token.size()) {
        if (token.compare(i, m_.replacement_utf8.size(), m_.replacement_utf8) == 0) {
          if (!drop) out += ' ';
          i += m_.replacement_utf8.size();
        } else {
          out += token[i++];
        }
      }
      tokens[t].swap(out);
    }
  }

 private:
  MetaspaceSettings m_;
};

}  // namespace

void add_metaspace_steps(const JsonRef& j, PreTokenizer& out) {
  auto rewrite = std::make_unique<MetaspaceRewrite>(j);
  const MetaspaceSettings& m = rewrite->settings();
  const bool split = m.split;
  const char32_t r = m.replacement;
  out.add(std::move(rewrite));
  // The cut before each replacement character.
  if (split) out.add(char_cut([r](char32_t c) { return c == r; }, SplitBehavior::kMergedWithNext));
}

std::unique_ptr<Decoder> make_metaspace_decoder(const JsonRef& j) {
  return std::make_unique<MetaspaceDecoder>(j);
}

}  // namespace il::text
