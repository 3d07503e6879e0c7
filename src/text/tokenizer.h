// A tokenizer read from a Hugging Face tokenizer.json, producing the same ids, type ids and
// offsets as the `tokenizers` library. Encoding is const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace il::text {

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  // UTF-8 byte ranges [begin, end) into the text of the token's own sequence (the first text or
  // the pair's text); [0, 0] for special tokens added by the post-processor.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<uint8_t> special_tokens_mask;  // 1 for tokens added by the post-processor
  std::vector<int8_t> sequence_ids;          // 0, 1, or -1 for added special tokens
};

enum class TruncationStrategy { kLongestFirst, kOnlyFirst, kOnlySecond };
enum class TruncationDirection { kRight, kLeft };

struct EncodeOptions {
  bool add_special_tokens = true;
  std::size_t max_length = 0;  // 0: no limit. Counts special tokens.
  bool truncate = true;        // false: exceeding max_length throws il::Error instead
  TruncationStrategy strategy = TruncationStrategy::kLongestFirst;
  TruncationDirection direction = TruncationDirection::kRight;
};

class Tokenizer {
 public:
  // Throws il::Error naming the file and the field it cannot handle.
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);
  static Tokenizer from_json_string(std::string_view json, const std::string& source_name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Invalid UTF-8 input throws il::Error (never silently replaced).
  Encoding encode(std::string_view text, const EncodeOptions& options = {}) const;
  Encoding encode_pair(std::string_view first, std::string_view second,
                       const EncodeOptions& options = {}) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = true) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  std::size_t vocab_size() const;              // model vocab plus added tokens
  std::string model_type() const;              // "WordPiece", "BPE", "Unigram"
  std::size_t num_special_tokens_to_add(bool pair) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace il::text
