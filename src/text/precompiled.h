// The `Precompiled` normalizer: SentencePiece's normalisation rules compiled into its model
// (`precompiled_charsmap`, base64 in tokenizer.json). The blob is a little-endian u32 byte size of
// a Darts-clone double array, the array's u32 units, then the replacement strings, each ended by a
// NUL; the array maps a UTF-8 key to the offset of its replacement.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_util.h"
#include "text/normalizers.h"

namespace il::text {

class PrecompiledCharsmap {
 public:
  // Parses the decoded blob; `field` reports malformed data (as the library does at load).
  PrecompiledCharsmap(std::string_view blob, const JsonRef& field);

  // The replacement of the shortest prefix of `text` that has one (the library's
  // Precompiled::transform), or nullopt. Throws il::Error when the array points outside itself
  // or into the middle of a character (where the library would panic).
  std::optional<std::string_view> transform(std::string_view text) const;

  // SentencePiece's own lookup (its normaliser's NormalizePrefix): the replacement of the LONGEST
  // key that is a prefix of `text` and that key's length in bytes, or nullopt.
  std::optional<std::pair<std::string_view, std::size_t>> longest_prefix(std::string_view text) const;

  // Whether some key starts with byte b: text without such bytes is never changed.
  bool may_start_with(unsigned char b) const { return starts_[b]; }

 private:
  uint32_t unit(std::size_t index) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
  bool starts_[256] = {};
};

std::unique_ptr<Normalizer> make_precompiled_normalizer(const JsonRef& j);

}  // namespace il::text
