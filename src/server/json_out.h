// Fast JSON writing of float vectors (the bulk of every embedding response): shortest
// round-trip decimal per float, so a client parses back the exact f32 the engine produced.
#pragma once

#include <cstddef>
#include <string>

namespace il::server {

void append_float(std::string& out, float v);  // non-finite values become null
void append_floats(std::string& out, const float* v, std::size_t n);  // [a,b,...]

}  // namespace il::server
