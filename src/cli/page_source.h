// The pages the ocr command reads: image files (one page each) and PDFs (a page each, rasterised
// one at a time when its turn comes, so a long document is never held in memory whole, by
// poppler's tools run as separate programs: image/pdf_pages.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "image/pdf_pages.h"

namespace il::cli {

struct PageRef {
  std::string source;     // the file as given
  std::size_t page = 0;   // 1-based page of a PDF; 0 for an image file
  std::string name() const { return page ? source + " page " + std::to_string(page) : source; }
};

// --pages: image::PageRanges::parse, a malformed list a UsageError naming the option.
image::PageRanges parse_page_option(const std::string& text);

// Every page of the inputs, in order (PDF pages filtered by `selection`). Throws il::Error naming
// a file that cannot be read, or a PDF whose page count pdfinfo cannot give.
std::vector<PageRef> list_pages(const std::vector<std::string>& paths, const image::PageRanges& selection);

// The page as encoded image bytes: the file itself, or the PDF page rendered to PNG at `dpi`.
// Thread-safe. Throws il::Error naming the page.
std::vector<std::uint8_t> read_page(const PageRef& page, int dpi, std::size_t max_bytes);

}  // namespace il::cli
