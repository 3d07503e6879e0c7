// DeepSeek-OCR's grounded output (the "<|grounding|>" prompts): the model writes each layout
// block as <|ref|>LABEL<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|> followed by the block's
// text, with coordinates on a 0–999 grid over the page. This turns such text into what a
// document pipeline wants: the Markdown without the tags, and each block's label, boxes in page
// pixels and text. The pixel rule is the reference's (DeepSeek-OCR's run scripts:
// ⌊v / 999 · page side⌋), clamped to the page. Figures ("image" blocks) leave a comment in the
// Markdown where they stood: <!-- figure K: x1,y1,x2,y2 --> (K counts from 1 per page).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace il {
class Engine;
struct GenerationResult;
}  // namespace il

namespace il::runtime {

struct GroundedBlock {
  std::string label;                       // "title", "text", "table", "image", ...
  std::vector<std::array<int, 4>> boxes;   // x1, y1, x2, y2 in page pixels; empty when unreadable
  std::string text;                        // the block's text (to the next block), trimmed
};

struct GroundedPage {
  std::string markdown;
  std::vector<GroundedBlock> blocks;
};

// `text`: the decoded output with its special tokens kept (<|ref|> and friends are special
// tokens of the tokenizer). A block whose tags are not closed (an output cut at its length) stays
// in the Markdown as written. page_width, page_height: the page's pixels (≥ 1).
GroundedPage parse_grounding(std::string_view text, int page_width, int page_height);

// True when `text` holds a grounded block (the tags above).
bool has_grounding(std::string_view text);

// An OCR page's text as the ocr command and /ocr give it. Models without grounding: the tokens
// decoded without special tokens, no blocks. Grounding models (ModelInfo::ocr_grounding): the
// tokens (less the end id that stopped them) decoded with their special tokens and parsed, the
// Markdown as text and the blocks (empty when the output holds none: it is then decoded as for
// other models). page_width, page_height: the page's pixels.
struct OcrPageText {
  std::string text;
  std::optional<std::vector<GroundedBlock>> blocks;
};
OcrPageText ocr_page_text(const Engine& engine, const GenerationResult& result, int page_width, int page_height);

}  // namespace il::runtime
