// PDF pages as images, through poppler's command-line tools (Debian: poppler-utils) run as
// separate programs: no PDF parser is linked into the engine (poppler is GPL; a crash or hang
// on a hostile PDF stays in the helper, which runs under a time and size limit). The ocr
// command and the server's /ocr route read PDFs this way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace il::image {

// pdfinfo's page count. Throws il::Error naming the file (not a PDF, encrypted, poppler missing).
std::size_t pdf_page_count(const std::string& path);

// pdftoppm's PNG of one page (1-based) at `dpi`. Thread-safe. Throws il::Error naming the page.
std::vector<std::uint8_t> render_pdf_page(const std::string& path, std::size_t page, int dpi, std::size_t max_bytes);

// A selection of pages written "1-3,7,10-" (1-based, inclusive; an open end runs to the last
// page; empty selects every page), as the ocr command's --pages and /ocr's "pages" take it.
// parse throws il::Error saying what is wrong with the list (callers name their option).
struct PageRanges {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  static PageRanges parse(const std::string& text);
  bool contains(std::size_t page) const;
  std::vector<std::size_t> pages_of(std::size_t count) const;  // the selected pages of 1 … count
};

// Whether the file starts as a PDF does ("%PDF-").
bool looks_like_pdf(const std::uint8_t* bytes, std::size_t size);

}  // namespace il::image
