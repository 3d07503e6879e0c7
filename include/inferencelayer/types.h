// Small value types shared by the public API and the library internals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace il {

// Epilogue activations of a GEMM and of MLP / head layers. Switch on these without `default`
// so that a new enumerator fails to compile until every switch handles it.
// kQuickGelu: x · sigmoid(1.702 x) (CLIP's quick_gelu; DeepSeek-OCR's CLIP-L).
enum class Activation { kNone, kGeluErf, kGeluTanh, kSilu, kRelu, kTanh, kQuickGelu };

enum class PoolingMode { kMean, kCls, kLastToken };

constexpr std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kGeluErf: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSilu: return "silu";
    case Activation::kRelu: return "relu";
    case Activation::kTanh: return "tanh";
    case Activation::kQuickGelu: return "quick_gelu";
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
//
// Or, in its compact form (what Engine::load_image gives; `pixels` empty): the processor's resized
// and cropped uint8 image in `bytes` (height × width pixels of `channels` interleaved bytes, as
// decoded) and the value each byte stands for in each channel, (*byte_values)[c · 256 + byte]:
// the processor's rescale and normalise, one table per processor. A pixel value is a function of
// its channel and byte alone, so both forms give the same pixel_values() and the same embeddings
// bit for bit; the compact one is 4× smaller to upload and lets the device cut the patches.
struct ImageInput {
  std::size_t channels = 0;
  std::size_t height = 0;
  std::size_t width = 0;
  std::vector<float> pixels;  // channels × height × width
  std::vector<std::uint8_t> bytes;                   // compact form: height × width × channels
  std::shared_ptr<const std::vector<float>> byte_values;  // compact form: channels × 256

  bool compact() const { return pixels.empty() && !bytes.empty(); }
  // channels × height × width floats, from either form (no check that a compact one is whole).
  std::vector<float> pixel_values() const {
    if (!compact()) return pixels;
    std::vector<float> out(channels * height * width);
    const std::size_t plane = height * width;
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t i = 0; i < plane; ++i) out[c * plane + i] = (*byte_values)[c * 256 + bytes[i * channels + c]];
    return out;
  }
};

}  // namespace il
