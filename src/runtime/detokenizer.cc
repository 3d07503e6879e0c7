#include "runtime/detokenizer.h"

#include <span>

namespace il::runtime {

bool ends_mid_character(const std::string& s) {
  // Look back over at most 3 continuation bytes to the lead byte.
  std::size_t cont = 0;
  for (std::size_t i = s.size(); i > 0 && cont < 4; --i) {
    const auto c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) == 0x80) {
      ++cont;
      continue;
    }
    const std::size_t need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    return cont < need;
  }
  return false;
}

std::string Detokenizer::push(int32_t id) {
  ids_.push_back(id);
  const std::span<const int32_t> all(ids_);
  const std::string before = tok_.decode(all.subspan(prefix_, read_ - prefix_), true);
  const std::string now = tok_.decode(all.subspan(prefix_), true);
  static const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  const bool incomplete = ends_mid_character(now) ||
                          (now.size() >= 3 && now.compare(now.size() - 3, 3, kReplacement) == 0);
  if (now.size() <= before.size() || incomplete || now.compare(0, before.size(), before) != 0) {
    // Nothing new, or a character still incomplete; a decoder that rewrote the earlier text
    // (the prefix no longer matches) waits too, and catches up once the text is stable.
    return {};
  }
  std::string out = now.substr(before.size());
  prefix_ = read_;
  read_ = ids_.size();
  return out;
}

}  // namespace il::runtime
