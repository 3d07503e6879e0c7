#include "runtime/ocr_options.h"

namespace il::runtime {

SamplingOptions ocr_sampling_options(const text::Tokenizer* tokenizer) {
  SamplingOptions o;
  o.max_new_tokens = kOcrMaxNewTokens;
  o.temperature = 0.0f;
  o.no_repeat_ngram = kOcrNgram;
  o.ngram_window = kOcrNgramWindow;
  if (tokenizer)
    for (const char* markup : {"<td>", "</td>", "<tr>", "</tr>"})
      if (const auto id = tokenizer->token_to_id(markup)) o.ngram_whitelist.push_back(*id);
  return o;
}

}  // namespace il::runtime
