// DeepSeek-OCR's grounded output → Markdown and blocks with boxes in page pixels
// (runtime/ocr_grounding.h).
#include "runtime/ocr_grounding.h"

#include <gtest/gtest.h>

namespace il::runtime {
namespace {

using Box = std::array<int, 4>;

TEST(OcrGrounding, BlocksBoxesInPagePixelsAndMarkdownWithoutTags) {
  const std::string out =
      "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 90]]<|/det|>\n# Annual report\n\n"
      "<|ref|>text<|/ref|><|det|>[[0, 120, 999, 400], [10, 410, 500, 430]]<|/det|>\nFirst paragraph.\n\n"
      "<|ref|>image<|/ref|><|det|>[[200, 500, 800, 900]]<|/det|>\n\n"
      "<|ref|>table<|/ref|><|det|>[[50,910,950,990]]<|/det|>\n<table><tr><td>1</td></tr></table>";
  const GroundedPage p = parse_grounding(out, 1700, 2200);
  ASSERT_EQ(p.blocks.size(), 4u);
  EXPECT_EQ(p.blocks[0].label, "title");
  // ⌊v / 999 · side⌋: 100 → ⌊170.17⌋, 50 → ⌊110.11⌋, 900 → ⌊1531.53⌋, 90 → ⌊198.19⌋.
  EXPECT_EQ(p.blocks[0].boxes, (std::vector<Box>{{170, 110, 1531, 198}}));
  EXPECT_EQ(p.blocks[0].text, "# Annual report");
  EXPECT_EQ(p.blocks[1].boxes, (std::vector<Box>{{0, 264, 1700, 880}, {17, 902, 850, 946}}));
  EXPECT_EQ(p.blocks[1].text, "First paragraph.");
  EXPECT_EQ(p.blocks[2].label, "image");
  EXPECT_EQ(p.blocks[2].text, "");
  EXPECT_EQ(p.blocks[3].boxes, (std::vector<Box>{{85, 2004, 1616, 2180}}));
  EXPECT_EQ(p.blocks[3].text, "<table><tr><td>1</td></tr></table>");
  EXPECT_EQ(p.markdown,
            "\n# Annual report\n\n\nFirst paragraph.\n\n<!-- figure 1: 340,1101,1361,1981 -->\n\n\n"
            "<table><tr><td>1</td></tr></table>");
}

TEST(OcrGrounding, TextBeforeTheFirstBlockIsKept) {
  const GroundedPage p = parse_grounding("intro <|ref|>text<|/ref|><|det|>[[0,0,999,999]]<|/det|>body", 10, 20);
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(p.blocks[0].boxes, (std::vector<Box>{{0, 0, 10, 20}}));
  EXPECT_EQ(p.markdown, "intro body");
}

TEST(OcrGrounding, CoordinatesOutsideTheGridAreClampedToThePage) {
  const GroundedPage p = parse_grounding("<|ref|>text<|/ref|><|det|>[[-5, 0, 2000, 999.0]]<|/det|>x", 100, 100);
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(p.blocks[0].boxes, (std::vector<Box>{{0, 0, 100, 100}}));
}

TEST(OcrGrounding, UnreadableCoordinatesGiveABlockWithoutBoxes) {
  for (const char* coords : {"[[1, 2, 3]]", "not json", "[[1, 2, 3, \"4\"]]", "{}", "[[1,2,3,4], 5]"}) {
    const std::string out = std::string("<|ref|>text<|/ref|><|det|>") + coords + "<|/det|>body";
    const GroundedPage p = parse_grounding(out, 100, 100);
    ASSERT_EQ(p.blocks.size(), 1u) << coords;
    EXPECT_TRUE(p.blocks[0].boxes.empty()) << coords;
    EXPECT_EQ(p.blocks[0].text, "body") << coords;
    EXPECT_EQ(p.markdown, "body") << coords;
  }
  // A single box without the outer list is read too.
  EXPECT_EQ(parse_grounding("<|ref|>t<|/ref|><|det|>[0, 0, 999, 999]<|/det|>", 5, 5).blocks[0].boxes,
            (std::vector<Box>{{0, 0, 5, 5}}));
}

TEST(OcrGrounding, UnclosedTagsStayAsWritten) {
  // An output cut at its length, or tags the model wrote wrong: nothing is lost.
  for (const char* out : {"a <|ref|>text<|/ref|><|det|>[[1, 2", "a <|ref|>text", "<|ref|>x<|/ref|> <|det|>[]<|/det|>",
                          "plain text, no tags"}) {
    const GroundedPage p = parse_grounding(out, 100, 100);
    EXPECT_TRUE(p.blocks.empty()) << out;
    EXPECT_EQ(p.markdown, out);
    EXPECT_FALSE(has_grounding(out)) << out;
  }
  // An unclosed tag before a complete one: the complete one is read, the unclosed one kept.
  const GroundedPage p =
      parse_grounding("<|ref|>cut <|ref|>text<|/ref|><|det|>[[0,0,999,999]]<|/det|>body", 100, 100);
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(p.blocks[0].label, "text");
  EXPECT_EQ(p.markdown, "<|ref|>cut body");
  EXPECT_TRUE(has_grounding("x<|ref|>t<|/ref|><|det|>[]<|/det|>"));
}

}  // namespace
}  // namespace il::runtime
