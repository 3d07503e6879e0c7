// image::PageRanges, the "1-3,7,10-" page lists of the ocr command and /ocr: what a list selects
// from a document of n pages, and the lists refused (with what is wrong).
#include <gtest/gtest.h>

#include "core/error.h"
#include "image/pdf_pages.h"

namespace il::test {
namespace {

using image::PageRanges;

std::vector<std::size_t> pages(const std::string& spec, std::size_t count) {
  return PageRanges::parse(spec).pages_of(count);
}

TEST(PageRanges, SelectsPagesInOrderOnce) {
  EXPECT_EQ(pages("", 3), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(pages("1-3,7,10-", 12), (std::vector<std::size_t>{1, 2, 3, 7, 10, 11, 12}));
  EXPECT_EQ(pages("7,2,2-3", 9), (std::vector<std::size_t>{2, 3, 7}));  // ascending, each once
  EXPECT_EQ(pages("4-", 3), (std::vector<std::size_t>{}));                // past the end: nothing
  EXPECT_EQ(pages("2-8", 3), (std::vector<std::size_t>{2, 3}));
  EXPECT_TRUE(PageRanges::parse("5-").contains(1000000));
  EXPECT_FALSE(PageRanges::parse("5-6").contains(7));
}

TEST(PageRanges, RefusesMalformedLists) {
  for (const char* bad : {"0", "3-1", "a", "1,,2", "1,", "-2", "1-2-3", "1 ", "9999999999"}) {
    try {
      (void)PageRanges::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_FALSE(std::string(e.what()).empty()) << bad;
    }
  }
  EXPECT_THROW((void)PageRanges::parse("3-1"), Error);
}

}  // namespace
}  // namespace il::test
