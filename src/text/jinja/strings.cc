#include "text/jinja/strings.h"

#include <utf8proc.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "text/jinja/interpreter.h"

namespace il::text::jinja {

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - k);
    out.emplace_back(s.substr(k, n));
    k += n;
  }
  return out;
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper
  std::string out;
  utf8proc_int32_t cp;
  for (std::size_t k = 0; k < s.size();) {
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + k),
                                    static_cast<utf8proc_ssize_t>(s.size() - k), &cp);
    if (n <= 0) {
      out += s[k++];
      continue;
    }
    const utf8proc_int32_t m = mode == 0 ? utf8proc_tolower(cp) : utf8proc_toupper(cp);
    utf8proc_uint8_t buf[4];
    const auto w = utf8proc_encode_char(m, buf);
    out.append(reinterpret_cast<char*>(buf), static_cast<std::size_t>(w));
    k += static_cast<std::size_t>(n);
  }
  return out;
}

bool is_cased_letter(const std::string& cp) {
  return map_case(cp, 0) != map_case(cp, 1);
}

// Python's str.title(): a cased letter after a cased letter is lowered, otherwise uppered.
std::string title_case(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (const auto& cp : code_points(s)) {
    const bool cased = is_cased_letter(cp);
    out += cased ? map_case(cp, prev_cased ? 0 : 1) : cp;
    prev_cased = cased;
  }
  return out;
}

bool py_space(const std::string& cp) {
  return cp == " " || cp == "\t" || cp == "\n" || cp == "\r" || cp == "\v" || cp == "\f" ||
         cp == "\x1c" || cp == "\x1d" || cp == "\x1e" || cp == "\x1f" || cp == "\xc2\x85" ||
         cp == "\xc2\xa0" || cp == "\xe3\x80\x80" || cp == "\xe2\x80\xa8" || cp == "\xe2\x80\xa9";
}

// str.strip / lstrip / rstrip with Python's whitespace or the given characters.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  auto cps = code_points(s);
  std::set<std::string> set;
  const bool custom = chars.is_string();
  if (custom) {
    for (auto& c : code_points(chars.s)) set.insert(c);
  }
  auto strip_it = [&](const std::string& c) { return custom ? set.count(c) > 0 : py_space(c); };
  std::size_t b = 0;
  std::size_t e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  std::string out;
  for (std::size_t k = b; k < e; ++k) out += cps[k];
  return out;
}

std::vector<std::string> split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep.is_string()) {  // runs of whitespace, no empty parts
    const auto cps = code_points(s);
    std::string part;
    bool in_part = false;
    for (std::size_t k = 0; k < cps.size(); ++k) {
      if (py_space(cps[k])) {
        if (in_part) {
          out.push_back(part);
          part.clear();
          in_part = false;
        }
        continue;
      }
      if (!in_part && maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        std::string rest;
        for (std::size_t j = k; j < cps.size(); ++j) rest += cps[j];
        out.push_back(rest);  // Python keeps the remainder's trailing whitespace
        return out;
      }
      in_part = true;
      part += cps[k];
    }
    if (in_part) out.push_back(part);
    return out;
  }
  if (sep.s.empty()) throw make_error("empty separator");
  std::size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const std::size_t k = s.find(sep.s, start);
    if (k == std::string::npos) break;
    out.push_back(s.substr(start, k - start));
    start = k + sep.s.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string replace_all(const std::string& s, const std::string& a, const std::string& b, int64_t count) {
  std::string out;
  if (a.empty()) {  // Python inserts b between every code point
    const auto cps = code_points(s);
    int64_t n = 0;
    for (const auto& cp : cps) {
      if (count < 0 || n < count) {
        out += b;
        ++n;
      }
      out += cp;
    }
    if (count < 0 || n < count) out += b;
    return out;
  }
  std::size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const std::size_t k = s.find(a, start);
    if (k == std::string::npos) break;
    out.append(s, start, k - start);
    out += b;
    start = k + a.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace il::text::jinja
