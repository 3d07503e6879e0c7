// SentencePiece model files (text/sentencepiece_model.h) as a SigLIP folder ships spiece.model: the
// input is the file's bytes. A model that parses is given to the encoder, which encodes a few
// texts. Expected outcomes: il::Error naming the problem, or ids inside the vocabulary. Anything
// else is a finding (a crash, a sanitizer report, another exception, an id outside the pieces).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "text/sentencepiece.h"
#include "text/sentencepiece_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const il::text::SentencePieceEncoder encoder(il::text::parse_sentencepiece_model(bytes, "fuzz.model"),
                                                 "fuzz.model");
    const std::size_t pieces = encoder.model().pieces.size();
    for (const std::string_view text : {"Hello, World!", "  two  spaces\t\n", "caf\xc3\xa9 \xe2\x96\x81 \xff bad",
                                        "<unk></s>", ""})
      for (const int32_t id : encoder.encode(text))
        if (id < 0 || static_cast<std::size_t>(id) >= pieces) {
          std::fprintf(stderr, "id %d outside %zu pieces\n", id, pieces);
          std::abort();
        }
  } catch (const il::Error&) {
  }
  return 0;
}
