// Whether the client of a request is still connected. cpp-httplib 0.11 (Debian 12) gives a
// handler no access to its socket, so we find it by its address pair: the accepted socket
// whose peer is (remote_addr, remote_port) and whose local port is local_port. The socket stays
// open while the handler runs (httplib closes it after the handler returns), so the found
// descriptor cannot be reused by another connection in the meantime.
#pragma once

#include <string>

namespace il::server {

class ClientSocket {
 public:
  ClientSocket(const std::string& remote_addr, int remote_port, int local_port);
  // True when the peer closed or reset the connection. Never true when the socket was not found.
  bool gone() const;

 private:
  int fd_ = -1;
};

}  // namespace il::server
