#include "image/pdf_pages.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/subprocess.h"

namespace il::image {
namespace {

constexpr const char* kPopplerHint = "PDF input needs poppler's pdfinfo and pdftoppm: apt-get install poppler-utils";

}  // namespace

bool looks_like_pdf(const std::uint8_t* bytes, std::size_t size) {
  return size >= 5 && std::memcmp(bytes, "%PDF-", 5) == 0;
}

std::size_t pdf_page_count(const std::string& path) {
  const SubprocessResult r = run_subprocess({"pdfinfo", "--", path}, {1u << 20, std::chrono::seconds(60)},
                                            kPopplerHint);
  check(r.exit_code == 0, path, ": pdfinfo cannot read this PDF (exit ", r.exit_code, "): ", r.err);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Pages:", 0) != 0) continue;
    const std::size_t digits = line.find_first_not_of(' ', 6);
    if (digits == std::string::npos) break;
    try {
      const long long pages = std::stoll(line.substr(digits));
      check(pages >= 0, path, ": pdfinfo gives a negative page count");
      return static_cast<std::size_t>(pages);
    } catch (const std::logic_error&) {
      break;
    }
  }
  throw make_error(path, ": pdfinfo gives no page count");
}

std::vector<std::uint8_t> render_pdf_page(const std::string& path, std::size_t page, int dpi, std::size_t max_bytes) {
  const std::string n = std::to_string(page);
  const SubprocessResult r =
      run_subprocess({"pdftoppm", "-r", std::to_string(dpi), "-f", n, "-l", n, "-png", "--", path},
                     {max_bytes, std::chrono::seconds(120)}, kPopplerHint);
  check(r.exit_code == 0 && !r.out.empty(), path, " page ", page, ": pdftoppm cannot render it (exit ", r.exit_code,
        "): ", r.err);
  return std::vector<std::uint8_t>(r.out.begin(), r.out.end());
}

namespace {

std::size_t page_number(const std::string& s, const std::string& text) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9)
    throw make_error("'", text, "' is not a list like 1-3,7,10-");
  const std::size_t v = std::stoul(s);
  check(v > 0, "pages are numbered from 1");
  return v;
}

}  // namespace

PageRanges PageRanges::parse(const std::string& text) {
  PageRanges sel;
  std::size_t at = 0;
  while (at < text.size() || (at == text.size() && !text.empty() && text.back() == ',')) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    at = comma + 1;
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      const std::size_t p = page_number(item, text);
      sel.ranges.push_back({p, p});
      continue;
    }
    const std::size_t first = page_number(item.substr(0, dash), text);
    const std::string tail = item.substr(dash + 1);
    const std::size_t last = tail.empty() ? std::numeric_limits<std::size_t>::max() : page_number(tail, text);
    check(last >= first, "the range '", item, "' runs backwards");
    sel.ranges.push_back({first, last});
  }
  return sel;
}

bool PageRanges::contains(std::size_t page) const {
  if (ranges.empty()) return true;
  for (const auto& [a, b] : ranges)
    if (page >= a && page <= b) return true;
  return false;
}

std::vector<std::size_t> PageRanges::pages_of(std::size_t count) const {
  std::vector<std::size_t> out;
  for (std::size_t p = 1; p <= count; ++p)
    if (contains(p)) out.push_back(p);
  return out;
}

}  // namespace il::image
