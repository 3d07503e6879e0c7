// Floats as JSON numbers, shared by the CLI's JSONL output and the server's responses so both
// print the same digits for the same f32: the shortest decimal that reads back to exactly that
// float (std::to_chars). NaN and infinities have no JSON number; they become null, which a
// reader will notice instead of parsing a wrong value.
#pragma once

#include <cstddef>
#include <string>

namespace il {

void append_float(std::string& out, float v);
void append_floats(std::string& out, const float* values, std::size_t n);  // "[v0,v1,...]"

}  // namespace il
