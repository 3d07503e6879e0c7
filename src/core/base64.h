// Standard base64 (RFC 4648 §4, with padding): tokenizer.json's precompiled charsmaps, images sent
// to the server or the CLI as base64, and OpenAI's base64 embedding format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace il {

// Decodes strictly: nullopt on any character outside the alphabet (whitespace included), a
// length that is not a multiple of 4, misplaced padding, or non-zero leftover bits.
std::optional<std::string> decode_base64(std::string_view text);

// Binary data sent as text: a data: URI whose data is base64 ("data:image/png;base64,...") or
// bare base64. nullopt with `why` set when it is neither (a data: URI without ;base64, or
// base64 that decode_base64 refuses).
std::optional<std::string> decode_base64_or_data_uri(std::string_view text, std::string& why);

// Appends the base64 of n bytes, padded.
void append_base64(std::string& out, const unsigned char* bytes, std::size_t n);

}  // namespace il
