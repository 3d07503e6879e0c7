// glibc malloc settings for a long-running server process (see allocator.cc for the figures).
#pragma once

namespace il::server {

// Call before the model is loaded: it also decides where the load's temporary buffers go.
void tune_allocator_for_serving();

}  // namespace il::server
