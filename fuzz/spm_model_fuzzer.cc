// SentencePiece model files (text/sentencepiece_model.h) as a SigLIP folder ships spiece.model,
// and texts through SigLIP's tokenizer over them. The input is the file's bytes, optionally
// followed by the separator "\xff\xfe" and a text (a separator inside a model is read as the
// split: libFuzzer finds inputs either way). A model that parses is given to the encoder and to
// SiglipSpmTokenizer, which encode a few fixed texts and the input's text, plain, padded and
// truncated from either side. Expected outcomes: il::Error naming the problem, or ids inside the
// vocabulary. Anything else is a finding (a crash, a sanitizer report, another exception, an id
// outside the pieces).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/sentencepiece.h"
#include "text/sentencepiece_model.h"
#include "text/siglip_tokenizer.h"

namespace {

void check_ids(const std::vector<int32_t>& ids, std::size_t pieces) {
  for (const int32_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= pieces) {
      std::fprintf(stderr, "id %d outside %zu pieces\n", id, pieces);
      std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string_view text;
  if (const std::size_t cut = bytes.find("\xff\xfe"); cut != std::string_view::npos) {
    text = bytes.substr(cut + 2);
    bytes = bytes.substr(0, cut);
  }
  const std::vector<std::string_view> texts = {"Hello, World!", "  two  spaces\t\n", "caf\xc3\xa9 \xe2\x96\x81 \xff bad",
                                               "<unk></s>", "", text};
  try {
    const il::text::SentencePieceEncoder encoder(il::text::parse_sentencepiece_model(bytes, "fuzz.model"),
                                                 "fuzz.model");
    const std::size_t pieces = encoder.model().pieces.size();
    for (const std::string_view t : texts) {
      try {
        check_ids(encoder.encode(t), pieces);
      } catch (const il::Error&) {
      }
    }
    // SigLIP's clean-up and special tokens around the same model (it may refuse a model without
    // "</s>", or a text that is not UTF-8, with il::Error).
    const il::text::SiglipSpmTokenizer siglip(encoder, true, 8, "fuzz.model");
    for (const std::string_view t : texts) {
      try {
        check_ids(siglip.encode(t), pieces);
        check_ids(siglip.encode(t, false), pieces);
        const std::vector<int32_t> padded = siglip.encode_padded(t);
        if (padded.size() != siglip.max_length()) {
          std::fprintf(stderr, "padded to %zu ids, not %zu\n", padded.size(), siglip.max_length());
          std::abort();
        }
        check_ids(padded, pieces);
        for (const std::size_t limit : {std::size_t{1}, std::size_t{3}})
          for (const bool left : {false, true}) {
            const std::vector<int32_t> cut = siglip.encode_truncated(t, limit, true, left);
            if (cut.size() > limit) {
              std::fprintf(stderr, "truncated to %zu ids, more than %zu\n", cut.size(), limit);
              std::abort();
            }
            check_ids(cut, pieces);
          }
      } catch (const il::Error&) {
      }
    }
  } catch (const il::Error&) {
  }
  return 0;
}
