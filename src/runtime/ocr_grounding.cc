#include "runtime/ocr_grounding.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "inferencelayer/engine.h"

namespace il::runtime {
namespace {

constexpr std::string_view kRef = "<|ref|>", kRefEnd = "<|/ref|>", kDet = "<|det|>", kDetEnd = "<|/det|>";

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

int to_pixels(double v, int side) {
  const double p = std::floor(v / 999.0 * static_cast<double>(side));
  return static_cast<int>(std::clamp(p, 0.0, static_cast<double>(side)));
}

// [[x1, y1, x2, y2], ...] (also a single [x1, y1, x2, y2]); empty when it is anything else.
std::vector<std::array<int, 4>> read_boxes(std::string_view coords, int width, int height) {
  const nlohmann::json j = nlohmann::json::parse(coords, nullptr, /*allow_exceptions=*/false);
  std::vector<std::array<int, 4>> boxes;
  if (!j.is_array()) return boxes;
  const auto one = [&](const nlohmann::json& b) {
    if (!b.is_array() || b.size() != 4 ||
        !std::all_of(b.begin(), b.end(), [](const nlohmann::json& v) { return v.is_number(); }))
      return false;
    boxes.push_back({to_pixels(b[0].get<double>(), width), to_pixels(b[1].get<double>(), height),
                     to_pixels(b[2].get<double>(), width), to_pixels(b[3].get<double>(), height)});
    return true;
  };
  if (!j.empty() && j[0].is_number()) {
    if (!one(j)) boxes.clear();
    return boxes;
  }
  for (const nlohmann::json& b : j)
    if (!one(b)) return {};
  return boxes;
}

// One complete <|ref|>…<|/ref|><|det|>…<|/det|> starting at `at` (which holds "<|ref|>").
struct Tag {
  std::size_t begin = 0, end = 0;  // the whole tag
  std::string_view label, coords;
};

bool read_tag(std::string_view text, std::size_t at, Tag& t) {
  const std::size_t label_at = at + kRef.size();
  const std::size_t ref_end = text.find(kRefEnd, label_at);
  if (ref_end == std::string_view::npos) return false;
  const std::size_t det_at = ref_end + kRefEnd.size();
  if (text.substr(det_at, kDet.size()) != kDet) return false;
  const std::size_t coords_at = det_at + kDet.size();
  const std::size_t det_end = text.find(kDetEnd, coords_at);
  if (det_end == std::string_view::npos) return false;
  const std::string_view label = text.substr(label_at, ref_end - label_at);
  if (label.find(kRef) != std::string_view::npos) return false;  // an unclosed tag before this one
  t = {at, det_end + kDetEnd.size(), label, text.substr(coords_at, det_end - coords_at)};
  return true;
}

}  // namespace

bool has_grounding(std::string_view text) {
  for (std::size_t at = text.find(kRef); at != std::string_view::npos; at = text.find(kRef, at + 1)) {
    Tag t;
    if (read_tag(text, at, t)) return true;
  }
  return false;
}

GroundedPage parse_grounding(std::string_view text, int page_width, int page_height) {
  page_width = std::max(page_width, 1);
  page_height = std::max(page_height, 1);
  GroundedPage page;
  std::vector<Tag> tags;
  for (std::size_t at = text.find(kRef); at != std::string_view::npos;) {
    Tag t;
    if (read_tag(text, at, t)) {
      tags.push_back(t);
      at = text.find(kRef, t.end);
    } else {
      at = text.find(kRef, at + 1);
    }
  }
  std::size_t copied = 0, figures = 0;
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const Tag& t = tags[i];
    page.markdown.append(text.substr(copied, t.begin - copied));
    GroundedBlock b;
    b.label = trim(t.label);
    b.boxes = read_boxes(t.coords, page_width, page_height);
    const std::size_t next = i + 1 < tags.size() ? tags[i + 1].begin : text.size();
    b.text = trim(text.substr(t.end, next - t.end));
    if (b.label == "image") {
      page.markdown += "<!-- figure " + std::to_string(++figures);
      if (!b.boxes.empty()) {
        const auto& x = b.boxes.front();
        page.markdown += ": " + std::to_string(x[0]) + "," + std::to_string(x[1]) + "," + std::to_string(x[2]) +
                         "," + std::to_string(x[3]);
      }
      page.markdown += " -->";
    }
    copied = t.end;
    page.blocks.push_back(std::move(b));
  }
  page.markdown.append(text.substr(copied));
  return page;
}

OcrPageText ocr_page_text(const Engine& engine, const GenerationResult& result, int page_width, int page_height) {
  OcrPageText out;
  if (engine.info().ocr_grounding) {
    std::vector<int32_t> tokens = result.tokens;
    if (result.finish == FinishReason::kStopId && !tokens.empty()) tokens.pop_back();
    const std::string raw = engine.decode(tokens, /*skip_special_tokens=*/false);
    out.blocks.emplace();
    if (has_grounding(raw)) {
      GroundedPage page = parse_grounding(raw, page_width, page_height);
      out.text = std::move(page.markdown);
      *out.blocks = std::move(page.blocks);
      return out;
    }
  }
  out.text = engine.decode(result.tokens, /*skip_special_tokens=*/true);
  return out;
}

}  // namespace il::runtime
