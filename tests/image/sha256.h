// SHA-256 (FIPS 180-4), for comparing decoded pixels with the digests PIL's output was recorded as.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace il::image::test {

std::string sha256_hex(std::span<const std::uint8_t> data);

}  // namespace il::image::test
