// GPT-2's byte-level alphabet: every byte is written as a printable character (the printable
// Latin-1 bytes as themselves, the others as U+0100 and up, in byte order), so that a BPE
// vocabulary of characters can spell any byte sequence. Shared by the ByteLevel pre-tokenizer
// and the ByteLevel decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "text/json_util.h"
#include "text/pre_tokenizers.h"
#include "text/regex.h"

namespace il::text::byte_level {

// The UTF-8 form (1 or 2 bytes) of the character that stands for byte b.
std::string_view char_of_byte(uint8_t b);

// The byte that character c stands for, or -1 when c is not in the alphabet.
int byte_of_char(char32_t c);

// The split GPT-2 made before its byte-level BPE (the ByteLevel pre-tokenizer's use_regex).
const Regex& gpt2_split_regex();

// Appends `bytes` to `out` as UTF-8, each invalid sequence replaced by U+FFFD the way Rust's
// String::from_utf8_lossy does (one replacement per maximal invalid subpart).
void append_utf8_lossy(std::string& out, std::string_view bytes);

// The steps of the `ByteLevel` pre-tokenizer (add_prefix_space, use_regex; trim_offsets only
// matters to the post-processor).
void add_pre_tokenizer_steps(const JsonRef& j, PreTokenizer& out);

}  // namespace il::text::byte_level
