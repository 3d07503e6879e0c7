#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace il {
namespace {

// A pipe whose ends close themselves.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

constexpr std::size_t kMaxStderr = 64u << 10;

}  // namespace

SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessLimits& limits,
                                const std::string& install_hint) {
  check(!argv.empty(), "run_subprocess: no program");
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw make_error("cannot run ", argv[0], ": ", std::strerror(rc), install_hint.empty() ? "" : " (", install_hint,
                     install_hint.empty() ? "" : ")");
  out.close_end(1);
  err.close_end(1);

  SubprocessResult r;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  std::string failure;
  char buf[65536];
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0 && failure.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = argv[0] + " ran past " + std::to_string(limits.timeout.count() / 1000) + " s";
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failure = std::string("poll: ") + std::strerror(errno);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& dst = i == 0 ? r.out : r.err;
      const std::size_t cap = i == 0 ? limits.max_stdout : kMaxStderr;
      if (dst.size() + static_cast<std::size_t>(got) > cap) {
        if (i == 0) failure = argv[0] + " wrote more than " + std::to_string(cap) + " bytes";
        dst.append(buf, cap - dst.size());
      } else {
        dst.append(buf, static_cast<std::size_t>(got));
      }
    }
  }
  if (!failure.empty()) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw Error(failure);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

}  // namespace il
