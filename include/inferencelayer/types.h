// Small value types shared by the public API and the library internals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace il {

// Epilogue activations of a GEMM and of MLP / head layers. Switch on these without `default`
// so that a new enumerator fails to compile until every switch handles it.
enum class Activation { kNone, kGeluErf, kGeluTanh, kSilu, kRelu, kTanh };

enum class PoolingMode { kMean, kCls, kLastToken };

constexpr std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kGeluErf: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSilu: return "silu";
    case Activation::kRelu: return "relu";
    case Activation::kTanh: return "tanh";
  }
  return "?";
}

constexpr std::string_view pooling_name(PoolingMode p) {
  switch (p) {
    case PoolingMode::kMean: return "mean";
    case PoolingMode::kCls: return "cls";
    case PoolingMode::kLastToken: return "last";
  }
  return "?";
}

// A dense row-major f32 matrix returned by the engine.
struct Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<float> data;

  Matrix() = default;
  Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  float* row(std::size_t i) { return data.data() + i * cols; }
  const float* row(std::size_t i) const { return data.data() + i * cols; }
};

// One model input: token ids and, optionally, one segment id per token (empty = all 0).
struct TokenInput {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  // How many leading tokens came from a prompt put before the text (Engine::prompt_tokens).
  // Embedding models whose Pooling config says include_prompt: false pool without them.
  std::size_t prompt_tokens = 0;
  // Multi-vector (ColBERT) documents: one byte per token, 0 for a token whose vector is left out
  // of the output and of MaxSim (PyLate's skiplist: punctuation); empty = every token is kept.
  std::vector<uint8_t> keep;
  // 0: every token attends to every earlier (or, bidirectional, every) token of its input.
  // Otherwise only the first `attended_tokens` tokens are keys: the tokens after them (a
  // multi-vector query's expansion tokens when its folder masks them, PyLate's default) attend to
  // those alone.
  std::size_t attended_tokens = 0;
};

// One preprocessed image, as a transformers image processor gives it for one image: pixel_values
// of channels × height × width floats, row-major (resized, rescaled and normalised already).
struct ImageInput {
  std::size_t channels = 0;
  std::size_t height = 0;
  std::size_t width = 0;
  std::vector<float> pixels;  // channels × height × width
};

}  // namespace il
