// A token -> id map with string_view lookups, plus the reverse table, shared by the models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_util.h"
#include "text/string_hash.h"

namespace il::text {

class Vocab {
 public:
  // Reads {"token": id, ...}.
  void load(const JsonRef& j);

  std::optional<int32_t> find(std::string_view token) const {
    const auto it = map_.find(token);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string_view> token(int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= by_id_.size() || by_id_[id] == nullptr) {
      return std::nullopt;
    }
    return std::string_view(*by_id_[id]);
  }
  std::size_t size() const { return map_.size(); }
  // Byte length of the longest token.
  std::size_t max_token_bytes() const { return max_bytes_; }

 private:
  StringMap<int32_t> map_;
  std::vector<const std::string*> by_id_;  // keys of map_ (node-based, so stable)
  std::size_t max_bytes_ = 0;
};

}  // namespace il::text
