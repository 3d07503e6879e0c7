// The pages the ocr command reads: image files (one page each) and PDFs (a page each, rasterised
// one at a time when its turn comes, so a long document is never held in memory whole, by
// poppler's tools run as separate programs: image/pdf_pages.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace il::cli {

struct PageRef {
  std::string source;     // the file as given
  std::size_t page = 0;   // 1-based page of a PDF; 0 for an image file
  std::string name() const { return page ? source + " page " + std::to_string(page) : source; }
};

// "1-3,7,10-" style selection of PDF pages (1-based, inclusive; an open end runs to the last
// page); empty selects every page. Throws UsageError for a malformed list.
struct PageSelection {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  static PageSelection parse(const std::string& text);
  bool contains(std::size_t page) const;
};

// Every page of the inputs, in order (PDF pages filtered by `selection`). Throws il::Error naming
// a file that cannot be read, or a PDF whose page count pdfinfo cannot give.
std::vector<PageRef> list_pages(const std::vector<std::string>& paths, const PageSelection& selection);

// The page as encoded image bytes: the file itself, or the PDF page rendered to PNG at `dpi`.
// Thread-safe. Throws il::Error naming the page.
std::vector<std::uint8_t> read_page(const PageRef& page, int dpi, std::size_t max_bytes);

}  // namespace il::cli
