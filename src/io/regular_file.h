// Model files are read only when they are regular files. A FIFO in place of config.json or
// model.safetensors would block the loader forever (an open for reading waits for a writer), a
// device such as /dev/zero would never end, and a folder cannot be parsed. Symlinks are followed,
// so Hugging Face cache folders (every file a link into blobs/) load as before.
#pragma once

#include <filesystem>
#include <string>

namespace il::io {

// Throws il::Error "<path>: not found" or "<path>: not a regular file (a FIFO)" and the like.
void require_regular_file(const std::filesystem::path& path);

// The whole file, after require_regular_file. Throws il::Error naming the file.
std::string read_regular_file(const std::filesystem::path& path);

// open(2) for reading that never blocks on a FIFO swapped in after the check, and refuses anything
// that is not a regular file once open. Returns the descriptor; the caller closes it.
int open_regular_file(const std::filesystem::path& path);

}  // namespace il::io
