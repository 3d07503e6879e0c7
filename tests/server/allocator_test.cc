// The serving allocator settings hold: a freed large block no longer raises glibc's mmap
// threshold, so the next large block is mapped (and unmapped when freed) instead of being kept
// in an arena.
#include "server/allocator.h"

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace il::server {
namespace {

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
TEST(ServingAllocator, LargeBlocksStayMapped) {
  tune_allocator_for_serving();
  // A volatile pointer keeps the compiler from eliding the malloc / free pairs.
  char* volatile big = static_cast<char*>(std::malloc(8 << 20));
  ASSERT_NE(big, nullptr);
  std::memset(big, 1, 8 << 20);
  std::free(big);  // with glibc's default this raises the mmap threshold to 8 MiB
  const auto before = mallinfo2().hblks;
  char* volatile medium = static_cast<char*>(std::malloc(512 << 10));
  ASSERT_NE(medium, nullptr);
  medium[0] = 1;
  EXPECT_EQ(mallinfo2().hblks, before + 1) << "a 512 KiB block came from an arena, not from mmap";
  std::free(medium);
}
#endif

}  // namespace
}  // namespace il::server
