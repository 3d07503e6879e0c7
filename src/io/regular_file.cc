#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "core/error.h"

namespace il::io {
namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "an unknown kind of file";
}

void require_regular(const struct stat& st, const std::filesystem::path& path) {
  check(S_ISREG(st.st_mode), path.string(), ": not a regular file (", kind_of(st.st_mode), ")");
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

void require_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    check(err != ENOENT, path.string(), ": not found");
    throw make_error(path.string(), ": cannot stat: ", errno_text(err));
  }
  require_regular(st, path);
}

int open_regular_file(const std::filesystem::path& path) {
  require_regular_file(path);
  // O_NONBLOCK: should the path become a FIFO between the check and the open, the open returns
  // instead of waiting for a writer, and fstat below refuses it. It changes nothing for a regular
  // file.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  check(fd.get() >= 0, path.string(), ": cannot open: ", errno_text(errno));
  struct stat st {};
  check(::fstat(fd.get(), &st) == 0, path.string(), ": cannot stat: ", errno_text(errno));
  require_regular(st, path);
  return fd.release();
}

std::string read_regular_file(const std::filesystem::path& path) {
  Fd fd(open_regular_file(path));
  std::string out;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw make_error(path.string(), ": cannot read: ", errno_text(errno));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace il::io
