// The image placeholders a DeepSeek-OCR page takes (models/model.h, ViewVisionSpec::page_rows), at
// the released sizes: v1 (CLIP rows laid out as grids with a newline after each row) in each of
// its modes, DeepSeek-OCR-2 (learned queries per view).
#include <gtest/gtest.h>

#include "models/model.h"

namespace il::models {
namespace {

TEST(ViewRows, V1ModesGiveTheModelCardsTokenCounts) {
  ViewVisionSpec v;
  v.clip = true;
  // One view of S pixels (patch 16): SAM's grid S / 16, twice halved: n = S / 64, n · (n + 1) + 1.
  EXPECT_EQ(v.page_rows({32}), 73u);    // tiny 512
  EXPECT_EQ(v.page_rows({40}), 111u);   // small 640
  EXPECT_EQ(v.page_rows({64}), 273u);   // base 1024
  EXPECT_EQ(v.page_rows({80}), 421u);   // large 1280
  // Gundam: 640 tiles (10 × 10 rows each) on a 2 × 3 grid (columns, rows), then the 1024 view:
  // (10 · 3) · (10 · 2 + 1) + 16 · 17 + 1.
  EXPECT_EQ(v.page_rows({40, 40, 40, 40, 40, 40, 64}, {2, 3}), 630u + 272u + 1u);
}

TEST(ViewRows, Ocr2QueriesPerView) {
  ViewVisionSpec v;
  v.queries_small = 144;
  v.queries_large = 256;
  v.small_max_patches = 144;
  EXPECT_EQ(v.page_rows({64}), 257u);             // the 1024 view alone
  EXPECT_EQ(v.page_rows({48, 48, 64}), 545u);     // two 768 tiles and the global view
}

}  // namespace
}  // namespace il::models
