#include "server/allocator.h"

// malloc.h defines __GLIBC__ (through features.h) on glibc, so it comes before the test.
#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace il::server {

void tune_allocator_for_serving() {
#if defined(__GLIBC__)
  // glibc starts with a 128 KiB mmap threshold and raises it (up to 32 MiB, the trim threshold
  // with it to twice that) each time a mapped block above it is freed. A server frees such
  // blocks all the time (response bodies, batched results) on dozens of connection threads
  // spread over up to 8 arenas per core; once the threshold has moved, every arena keeps large
  // freed blocks and an untrimmed top instead of unmapping them, and RSS climbs for minutes.
  // Measured on the dev box (2 cores; GLIBC_TUNABLES allowing 128 arenas, as 16 cores get), the
  // all-MiniLM-L6 shape with random weights, bench/load_test.mjs mixed load, 64 clients, 90 s:
  // with the moving threshold the arenas grew 14.7 -> 31.4 MiB and RSS 359.8 -> 370.6 MiB after
  // warm-up; held, 10.1 -> 14.9 MiB and 349.0 -> 352.0 MiB. The model load's freed temporaries
  // also stayed in the main heap (42.7 MiB; 0.6 MiB held). Setting either value turns the
  // adjustment off; these are glibc's own starting values, so a block of 128 KiB or more costs
  // an mmap / munmap pair and its page faults, small next to the request that needed it.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}

}  // namespace il::server
