// The tokenizer on arbitrary input, with the three tokenizers of fuzz/tokenizers (WordPiece,
// byte-level BPE, Unigram with a precompiled charsmap) loaded once. The first bytes pick the
// tokenizer, the call and its options; the rest is the text (made valid UTF-8 except in the raw
// mode, so the fuzzer explores tokenization rather than the UTF-8 check) or the ids to decode.
// Every input must be accepted or refused with il::Error, and an encoding must be consistent
// (fields of one length, offsets inside their text, ids in the vocabulary, the length limit
// kept); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/tokenizer.h"

namespace {

using il::text::EncodeOptions;
using il::text::Encoding;
using il::text::Tokenizer;

const std::vector<Tokenizer>& tokenizers() {
  static const std::vector<Tokenizer> all = [] {
    std::vector<Tokenizer> t;
    for (const char* name : {"wordpiece.json", "bpe_byte_level.json", "unigram_precompiled.json"}) {
      t.push_back(Tokenizer::from_file(std::string(IL_FUZZ_TOKENIZERS) + "/" + name));
    }
    return t;
  }();
  return all;
}

[[noreturn]] void broken(const char* what, std::size_t i) {
  std::fprintf(stderr, "tokenizer_fuzzer: inconsistent encoding: %s (token %zu)\n", what, i);
  std::abort();
}

void check(const Tokenizer& t, const Encoding& e, std::string_view first, std::string_view second,
           const EncodeOptions& o) {
  const std::size_t n = e.ids.size();
  if (e.type_ids.size() != n || e.offsets.size() != n || e.special_tokens_mask.size() != n ||
      e.sequence_ids.size() != n) {
    broken("fields of different lengths", 0);
  }
  if (o.max_length > 0 && n > o.max_length) broken("longer than max_length", n);
  for (std::size_t i = 0; i < n; ++i) {
    if (e.ids[i] < 0 || static_cast<std::size_t>(e.ids[i]) >= t.vocab_size()) {
      broken("id outside the vocabulary", i);
    }
    const auto [begin, end] = e.offsets[i];
    if (begin > end) broken("offsets run backwards", i);
    const int8_t seq = e.sequence_ids[i];
    if (seq < -1 || seq > 1) broken("sequence id", i);
    if (seq < 0) {
      if (e.special_tokens_mask[i] != 1 || begin != 0 || end != 0) broken("special token", i);
      continue;
    }
    if (end > (seq == 0 ? first : second).size()) broken("offsets past the text", i);
  }
}

std::string valid_utf8(std::string_view bytes) {
  std::string s;
  il::text::byte_level::append_utf8_lossy(s, bytes);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const auto& all = tokenizers();
  const Tokenizer& t = all[data[0] % all.size()];
  const unsigned mode = (data[0] / all.size()) % 5;
  const std::uint8_t flags = data[1];
  EncodeOptions o;
  o.add_special_tokens = (flags & 1) != 0;
  o.truncate = (flags & 2) != 0;
  o.strategy = static_cast<il::text::TruncationStrategy>((flags >> 2) % 3);
  o.direction = (flags & 16) != 0 ? il::text::TruncationDirection::kLeft
                                  : il::text::TruncationDirection::kRight;
  o.max_length = data[2];
  const std::string_view payload(reinterpret_cast<const char*>(data) + 3, size - 3);
  try {
    switch (mode) {
      case 0: {  // encode, then decode what came out
        const std::string text = valid_utf8(payload);
        const Encoding e = t.encode(text, o);
        check(t, e, text, {}, o);
        (void)t.decode(e.ids, (flags & 32) != 0);
        break;
      }
      case 1: {  // the bytes as they are: invalid UTF-8 must be refused
        const Encoding e = t.encode(payload, o);
        check(t, e, payload, {}, o);
        break;
      }
      case 2: {  // a pair, cut at the first NUL byte
        const std::size_t cut = payload.find('\0');
        const std::string first = valid_utf8(payload.substr(0, cut));
        const std::string second =
            cut == std::string_view::npos ? std::string() : valid_utf8(payload.substr(cut + 1));
        const Encoding e = t.encode_pair(first, second, o);
        check(t, e, first, second, o);
        break;
      }
      case 3: {  // arbitrary ids, negative and past the vocabulary included
        std::vector<int32_t> ids;
        for (std::size_t i = 0; i + 1 < payload.size(); i += 2) {
          ids.push_back(static_cast<int16_t>(static_cast<std::uint8_t>(payload[i]) |
                                             static_cast<std::uint8_t>(payload[i + 1]) << 8));
        }
        (void)t.decode(ids, (flags & 32) != 0);
        break;
      }
      default: {  // the vocabulary lookups
        const std::string text = valid_utf8(payload);
        if (const auto id = t.token_to_id(text)) (void)t.id_to_token(*id);
        break;
      }
    }
  } catch (const il::Error&) {
  }
  return 0;
}
