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

}  // namespace

image::PageRanges parse_page_option(const std::string& text) {
  try {
    return image::PageRanges::parse(text);
  } catch (const Error& e) {
    throw UsageError(std::string("--pages: ") + e.what());
  }
}

std::vector<PageRef> list_pages(const std::vector<std::string>& paths, const image::PageRanges& selection) {
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
