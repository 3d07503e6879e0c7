// Metaspace (SentencePiece's view of spaces): the pre-tokenizer writes every space as the
// replacement character (U+2581 "▁" by default), prepends one to the text (prepend_scheme), and
// cuts the text before each of them (split); the decoder turns them back into spaces.
#pragma once

#include <memory>

#include "text/decoders.h"
#include "text/json_util.h"
#include "text/pre_tokenizers.h"

namespace il::text {

// The steps of the Metaspace pre-tokenizer: the rewrite, then the cut when `split` is on.
void add_metaspace_steps(const JsonRef& j, PreTokenizer& out);
std::unique_ptr<Decoder> make_metaspace_decoder(const JsonRef& j);

}  // namespace il::text
