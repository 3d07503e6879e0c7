// il::Error: the one exception type of the library. It carries enough context (file, tensor,
// field, line, op) for the CLI and the server to turn it into a message a user can act on.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace il {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(std::move(message)) {}
};

// Concatenates its arguments with operator<< into an il::Error message.
template <typename... Args>
[[nodiscard]] Error make_error(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return Error(os.str());
}

// Throws il::Error built from the remaining arguments when cond is false.
template <typename... Args>
void check(bool cond, Args&&... args) {
  if (!cond) throw make_error(std::forward<Args>(args)...);
}

}  // namespace il
