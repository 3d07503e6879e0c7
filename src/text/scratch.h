// Per-thread scratch buffers: encode() reuses them so that a warm thread does not allocate per
// token, but one that grew for a huge input is freed after that input, so a thread does not keep
// the memory of its largest request for the rest of its life.
#pragma once

#include <cstddef>

namespace il::text {

// Buffers up to this size stay (a few thousand tokens of text); larger ones are freed.
inline constexpr std::size_t kKeepScratchBytes = std::size_t{256} << 10;

template <typename Container>
void release_if_large(Container& c) {
  if (c.capacity() * sizeof(typename Container::value_type) > kKeepScratchBytes) {
    Container().swap(c);
  }
}

}  // namespace il::text
