#include "server/client_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <filesystem>
#include <system_error>

namespace il::server {
namespace {

bool matches(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  sockaddr_storage peer{}, local{};
  socklen_t plen = sizeof peer, llen = sizeof local;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) return false;
  char addr[INET6_ADDRSTRLEN] = {};
  int pport = -1, lport = -1;
  if (peer.ss_family == AF_INET) {
    const auto* p = reinterpret_cast<const sockaddr_in*>(&peer);
    inet_ntop(AF_INET, &p->sin_addr, addr, sizeof addr);
    pport = ntohs(p->sin_port);
    lport = ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
  } else if (peer.ss_family == AF_INET6) {
    const auto* p = reinterpret_cast<const sockaddr_in6*>(&peer);
    inet_ntop(AF_INET6, &p->sin6_addr, addr, sizeof addr);
    pport = ntohs(p->sin6_port);
    lport = ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
  } else {
    return false;
  }
  return pport == remote_port && lport == local_port && remote_addr == addr;
}

}  // namespace

ClientSocket::ClientSocket(const std::string& remote_addr, int remote_port, int local_port) {
  // Only the open descriptors: the file limit may be a million.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc() || fd < 3) continue;
    if (matches(fd, remote_addr, remote_port, local_port)) {
      fd_ = fd;
      return;
    }
  }
}

bool ClientSocket::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  // POLLIN alone is a pipelined next request, not a departure.
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace il::server
