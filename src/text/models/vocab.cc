#include "text/models/vocab.h"

namespace il::text {

void Vocab::load(const JsonRef& j) {
  j.expect_object();
  // Ids index a table, so they must be dense enough for one; real vocabularies are 0..n-1.
  constexpr int64_t kMaxId = (int64_t{1} << 26) - 1;
  map_.reserve(j.value().size());
  int64_t max_id = -1;
  for (const auto& [token, id_json] : j.value().items()) {
    const JsonRef id_ref(j.source(), id_json, j.path() + "[\"" + token + "\"]");
    const auto id = static_cast<int32_t>(id_ref.as_int(0, kMaxId));
    const auto [it, inserted] = map_.emplace(token, id);
    if (!inserted) id_ref.fail("is a duplicate token");
    max_id = std::max<int64_t>(max_id, id);
    max_bytes_ = std::max(max_bytes_, token.size());
  }
  by_id_.assign(static_cast<std::size_t>(max_id + 1), nullptr);
  for (const auto& [token, id] : map_) {
    // Two tokens with one id: the library's reverse map keeps an arbitrary one; keep the first.
    if (by_id_[id] == nullptr) by_id_[id] = &token;
  }
}

}  // namespace il::text
