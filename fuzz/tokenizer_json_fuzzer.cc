// tokenizer.json: each input is loaded with Tokenizer::from_json_string; a tokenizer that loads
// then encodes and decodes a few fixed texts, so that what a file can configure is also run.
// Accepted or refused with il::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace {

void exercise(const il::text::Tokenizer& t) {
  static const std::string_view kTexts[] = {
      "Hello, world! It's 2024 -- naïve café, 東京, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 "
      "ｆｕｌｌ\u00a0width\tand  spaces\n",
      "[CLS] <s> </s> <mask> [MASK] <|endoftext|>  a",
      ""};
  for (const std::string_view text : kTexts) {
    try {
      const il::text::Encoding e = t.encode(text);
      (void)t.decode(e.ids, false);
      (void)t.decode(e.ids, true);
    } catch (const il::Error&) {
    }
    try {
      il::text::EncodeOptions o;
      o.max_length = 5;
      o.direction = il::text::TruncationDirection::kLeft;
      (void)t.encode_pair(text, kTexts[0], o);
    } catch (const il::Error&) {
    }
  }
  std::vector<int32_t> ids;
  for (int32_t id = -2; id < 300; ++id) ids.push_back(id);
  try {
    (void)t.decode(ids, false);
  } catch (const il::Error&) {
  }
  (void)t.vocab_size();
  (void)t.id_to_token(0);
  (void)t.token_to_id("a");
  (void)t.num_special_tokens_to_add(true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto t = il::text::Tokenizer::from_json_string(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    exercise(t);
  } catch (const il::Error&) {
  }
  return 0;
}
