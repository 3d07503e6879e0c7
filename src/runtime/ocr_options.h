// The decoding policy of OCR requests (Engine::ocr_request, the ocr command, /ocr): greedy, and
// the anti-loop guard OCR deployments run. A page that degenerates into a loop ("| | | | ..." or
// one line over and over) otherwise burns its whole token budget; the guard bans a token that
// would repeat a 30-token n-gram seen in the last 90 tokens, except n-grams holding table-cell
// markup, which repeats by nature (vLLM's DeepSeek-OCR recipe: NoRepeatNGramLogitsProcessor with
// ngram_size 30, window_size 90 and the <td> / </td> tokens whitelisted).
#pragma once

#include <cstddef>

#include "inferencelayer/generation.h"
#include "text/tokenizer.h"

namespace il::runtime {

inline constexpr std::size_t kOcrMaxNewTokens = 4096;
inline constexpr std::size_t kOcrNgram = 30;
inline constexpr std::size_t kOcrNgramWindow = 90;

// Greedy, kOcrMaxNewTokens, the guard; the whitelist holds the ids of the table markup strings
// the tokenizer has as single tokens ("<td>", "</td>", "<tr>", "</tr>"; none without a tokenizer).
SamplingOptions ocr_sampling_options(const text::Tokenizer* tokenizer);

}  // namespace il::runtime
