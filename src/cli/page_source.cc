#include "cli/page_source.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "cli/cli_common.h"
#include "core/error.h"
#include "image/pdf_pages.h"
#include "io/regular_file.h"

namespace il::cli {
namespace {

bool is_pdf(const std::string& path) {
  io::require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  char head[5] = {};
  in.read(head, 5);
  return in.gcount() == 5 && image::looks_like_pdf(reinterpret_cast<const std::uint8_t*>(head), 5);
}

std::size_t parse_page_number(const std::string& s, const std::string& text) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9)
    throw UsageError("--pages: '" + text + "' is not a list like 1-3,7,10-");
  const std::size_t v = std::stoul(s);
  if (v == 0) throw UsageError("--pages: pages are numbered from 1");
  return v;
}

}  // namespace

PageSelection PageSelection::parse(const std::string& text) {
  PageSelection sel;
  if (text.empty()) return sel;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      const std::size_t p = parse_page_number(item, text);
      sel.ranges.push_back({p, p});
    } else {
      const std::size_t first = parse_page_number(item.substr(0, dash), text);
      const std::string tail = item.substr(dash + 1);
      const std::size_t last = tail.empty() ? std::numeric_limits<std::size_t>::max() : parse_page_number(tail, text);
      if (last < first) throw UsageError("--pages: the range '" + item + "' runs backwards");
      sel.ranges.push_back({first, last});
    }
  }
  return sel;
}

bool PageSelection::contains(std::size_t page) const {
  if (ranges.empty()) return true;
  for (const auto& [a, b] : ranges)
    if (page >= a && page <= b) return true;
  return false;
}

std::vector<PageRef> list_pages(const std::vector<std::string>& paths, const PageSelection& selection) {
  std::vector<PageRef> pages;
  for (const std::string& path : paths) {
    if (!is_pdf(path)) {
      pages.push_back({path, 0});
      continue;
    }
    const std::size_t n = image::pdf_page_count(path);
    for (std::size_t p = 1; p <= n; ++p)
      if (selection.contains(p)) pages.push_back({path, p});
  }
  return pages;
}

std::vector<std::uint8_t> read_page(const PageRef& page, int dpi, std::size_t max_bytes) {
  if (page.page == 0) {
    const std::string bytes = io::read_regular_file(page.source);
    check(bytes.size() <= max_bytes, page.source, ": ", bytes.size(), " bytes, more than the limit of ", max_bytes);
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  }
  return image::render_pdf_page(page.source, page.page, dpi, max_bytes);
}

}  // namespace il::cli
