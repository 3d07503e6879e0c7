// The public entry point: load a Hugging Face model folder, tokenize, and run it.
//
//   auto engine = il::Engine::load("path/to/model", {});
//   il::Matrix vectors = engine->embed({engine->tokenize("hello world")}, {});
//
// An Engine is safe to use from one thread at a time for compute calls (from lanes() threads at
// once for its encoder calls); tokenize() is const and may be called concurrently. Errors are reported as il::Error (a std::runtime_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferencelayer/generation.h"
#include "inferencelayer/types.h"

namespace il {

struct EngineOptions {
  // "auto" (a CUDA device when this build has the backend and one is present, else the CPU),
  // "cpu", "cuda" or "cuda:N" (a CUDA request without a device runs on the CPU with a notice).
  std::string device = "auto";
  // Compute precision: "f32" (the parity class, every backend), "f16" or "bf16" (CUDA only:
  // tensor cores with f32 accumulation). "auto" is f32: low precision is always asked for. An
  // explicit f16/bf16 that ends up on the CPU is refused rather than silently ignored.
  std::string dtype = "auto";
  std::size_t max_batch_tokens = 16384;  // scratch is sized for this many tokens per forward
  std::size_t threads = 0;               // 0 = one per hardware thread
  // Image inputs (Engine::load_image): larger encoded files or decoded images are refused with
  // an error naming the input.
  std::size_t max_image_bytes = 64u << 20;
  std::size_t max_image_pixels = 89'478'485;  // PIL's Image.MAX_IMAGE_PIXELS
  // Generating models: the KV cache's budget in tokens shared by the sequences in flight (0: a
  // default of 8,192 on the CPU, 131,072 on a GPU, never more than the model's context × 64),
  // handed out in pages of kv_page_size tokens.
  std::size_t kv_cache_tokens = 0;
  std::size_t kv_page_size = 64;
  // Generating models: the prompt tokens plus image patches of the newcomers one step prefills
  // while other sequences decode (0: whatever fits the batch, throughput first). Bounds how long
  // a newcomer's prefill holds back the others' next token; a prompt is never split, so one
  // larger than this still goes alone in its step.
  std::size_t prefill_tokens_per_step = 0;
  // Encoder passes that may be in flight at once (Engine::lanes): on a GPU each lane is its own
  // stream and scratch over the one copy of the weights, so small passes from several threads
  // overlap on the device. 1 on the CPU and for generating models (one scheduler drives them).
  std::size_t lanes = 1;
};

// What a model can do; the CLI and server route by these (a route the model cannot serve is
// refused with 424).
struct Capabilities {
  bool embed = false;          // pooled sentence embeddings (embed, /embed, /v1/embeddings)
  bool hidden_states = false;  // the final hidden state of every token (--output-kind hidden, /embed_all)
  bool score = false;          // a score per input or input pair (rerank, /rerank, /predict)
  bool multi_vector = false;   // one vector per token for late interaction (ColBERT MaxSim)
  bool image_input = false;    // images as inputs
  bool generate = false;       // text generation
  bool ocr = false;            // page images to text (ocr_request, the ocr command, /ocr)
};

// The coarse kind, kept for existing callers: kCrossEncoder when the model scores, else
// kEmbedding. New code reads ModelInfo::capabilities.
enum class ModelKind { kEmbedding, kCrossEncoder };

// What a folder holds, for `inferencelayer info` and the server's /info.
struct ModelInfo {
  std::string path;
  std::string model_type;      // config.json model_type
  std::string architecture;    // architectures[0], or the model type when absent
  std::string layout;          // "bert", "xlm-roberta", "jina-xlm-roberta", "qwen3", "qwen3-reranker"
  ModelKind kind = ModelKind::kEmbedding;
  Capabilities capabilities;
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;            // key / value heads (fewer than heads under grouped-query attention)
  int intermediate = 0;
  int vocab = 0;
  int type_vocab = 0;          // segment (token type) ids accepted: 0 .. type_vocab - 1 (0 alone when 0)
  int max_tokens = 0;          // per sequence, special tokens included
  int num_labels = 0;          // cross-encoders
  std::vector<std::string> labels;  // cross-encoders: each output's name (config id2label, else "LABEL_i")
  int output_dim = 0;          // embedding width (after a Dense module); a multi-vector model: its token vectors' width
  std::string activation;
  std::string stored_dtype;    // dtype of the safetensors data
  std::size_t parameters = 0;
  std::size_t weight_bytes = 0;
  PoolingMode pooling = PoolingMode::kMean;
  bool normalize = false;
  bool sentence_transformers = false;
  bool random_weights = false; // a demo / fixture folder: its outputs mean nothing
  std::string tokenizer;       // tokenizer model kind ("WordPiece", ...) or "" when absent
  std::map<std::string, std::string> prompts;  // config_sentence_transformers.json
  std::string default_prompt_name;
  bool include_prompt = true;  // 1_Pooling: false = pooling leaves a prompt's tokens out
  std::string backend;         // where it runs: "cpu", "cuda:0", ...
  std::string compute_dtype;   // "f32", "f16" or "bf16"
  // Image models (capabilities.image_input): the pixel_values each image becomes.
  int image_channels = 0, image_height = 0, image_width = 0;
  int patch_size = 0;
  // OCR models: the tasks ocr_request takes (the first is the default).
  std::vector<std::string> ocr_tasks;
  // OCR models whose output may hold grounded blocks (DeepSeek-OCR's <|ref|>…<|det|>…): the ocr
  // command and /ocr parse them into boxes (runtime/ocr_grounding.h).
  bool ocr_grounding = false;
  // Models whose folders carry no chat template and take the plain conversation format
  // (DeepSeek-OCR: the messages' text with "<image>" where each image stands, BOS first): what the
  // chat route renders when the folder has no template.
  bool plain_chat = false;
  // Image models with resolution modes (DeepSeek-OCR v1): what load_prompt_image's mode takes,
  // the default first; empty when the model has none.
  std::vector<std::string> ocr_modes;
  int image_embedding_dim = 0;   // width of an image embedding (embed_images)
  // Image–text models (SigLIP): a pair's logit is exp(logit_scale) · cos(image, text) + logit_bias,
  // its probability the logit's sigmoid.
  bool has_logit = false;
  float logit_scale = 0.0f, logit_bias = 0.0f;
  // What the loader left out of the checkpoint or changed, and why (info prints them).
  std::vector<std::string> notes;
};

// What a text is to a multi-vector (ColBERT) model: PyLate tokenizes queries and documents
// differently (its marker token, query expansion, length, skiplist).
enum class TextRole { kNone, kQuery, kDocument };

// Per-request tokenization choices (the server's truncate / truncation_direction /
// add_special_tokens fields).
struct TokenizeOptions {
  bool truncate = true;
  bool truncate_left = false;  // cut tokens from the start of the text instead of its end
  bool add_special_tokens = true;
  bool limit_length = true;    // false: no maximum at all (showing a whole tokenization)
  // Pairs of a model scored through a prompt (Qwen3-Reranker): the task instruction written into
  // it; empty: the model's default. Other models refuse one.
  std::string instruction;
  // Multi-vector models: tokenize as PyLate does for a query or a document (the marker token
  // inserted after the first token; queries cut to query_length and expanded to it with the mask
  // token, documents cut to document_length, their skiplist tokens marked in TokenInput::keep).
  // kNone: the plain tokenization (what hidden states of a text read); other models refuse a role.
  TextRole role = TextRole::kNone;
};

// One token with its UTF-8 byte span in the text; special tokens added by the post-processor
// have no span.
struct TokenDetail {
  int32_t id = 0;
  std::string text;  // the covered text, or the token string for a special token
  bool special = false;
  std::size_t start = 0;
  std::size_t stop = 0;
};

struct EmbedOptions {
  std::optional<bool> normalize;         // default: the folder's Normalize module
  std::optional<PoolingMode> pooling;    // default: the folder's pooling config
  std::size_t dimensions = 0;            // Matryoshka: keep the first N dims (re-normalised)
};

class Engine {
 public:
  static std::unique_ptr<Engine> load(const std::filesystem::path& model_dir,
                                      const EngineOptions& options);
  // Random weights from a config.json alone (benchmarks: real speed, meaningless outputs), with
  // the tokenizer.json at `tokenizer_json` (empty: token-id inputs only).
  static std::unique_ptr<Engine> load_random(const std::filesystem::path& config_json,
                                             const std::filesystem::path& tokenizer_json,
                                             const EngineOptions& options);
  virtual ~Engine() = default;

  virtual const ModelInfo& info() const = 0;

  // Tokenization with the folder's tokenizer.json. With truncate=false an input longer than the
  // model's maximum is an il::Error that says how long it is and what the maximum is.
  virtual TokenInput tokenize(std::string_view text, bool truncate = true) const = 0;
  virtual TokenInput tokenize_pair(std::string_view first, std::string_view second,
                                   bool truncate = true) const = 0;

  // The same with request options; token_details adds each token's text and span.
  virtual TokenInput tokenize_with(std::string_view text, const TokenizeOptions& options) const;
  virtual TokenInput tokenize_pair_with(std::string_view first, std::string_view second,
                                        const TokenizeOptions& options) const;
  virtual std::vector<TokenDetail> token_details(std::string_view text,
                                                 const TokenizeOptions& options) const;
  // How many leading tokens of prompt + text are the prompt's, counted as sentence-transformers
  // counts them (its prompt_length): the prompt tokenized alone, special tokens included, minus
  // one; 0 for an empty prompt. Set it as TokenInput::prompt_tokens of each prompted input.
  virtual std::size_t prompt_tokens(std::string_view prompt) const;
  // Token ids back to text with the folder's decoder.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;

  // Pooled (and by default normalised) embeddings, one row per input.
  virtual Matrix embed(const std::vector<TokenInput>& inputs, const EmbedOptions& options) = 0;
  // The final hidden states, one [tokens, hidden] matrix per input.
  virtual std::vector<Matrix> hidden_states(const std::vector<TokenInput>& inputs) = 0;
  // Cross-encoders: raw logits, one row of num_labels per input pair.
  virtual Matrix score(const std::vector<TokenInput>& inputs) = 0;

  // Multi-vector (ColBERT) models: each input's kept tokens (TokenInput::keep), one L2-normalised
  // vector per token, a [kept tokens, dim] matrix per input. Tokenize with a TextRole.
  virtual std::vector<Matrix> token_vectors(const std::vector<TokenInput>& inputs);
  // Multi-vector models: the late-interaction (MaxSim) score of each document against the query,
  // Σ over the query's tokens of the largest dot product with a kept document token, computed on
  // the engine's device; the query is run with every batch of documents.
  virtual std::vector<float> late_interaction(const TokenInput& query, const std::vector<TokenInput>& documents);

  // Image models (info().capabilities.image_input). load_image decodes an encoded image (JPEG,
  // PNG, WebP) and preprocesses it as the folder's preprocessor_config.json says, into the
  // pixel_values embed_images takes, in ImageInput's compact form (uint8 image and byte values:
  // pixel_values() expands it); `name` names the input in errors. It is const and may be
  // called concurrently (the server decodes on worker threads).
  virtual ImageInput load_image(const std::vector<std::uint8_t>& bytes, std::string_view name) const;
  // Pooled image embeddings, one row per image (normalised as options say; default: the folder's).
  virtual Matrix embed_images(const std::vector<ImageInput>& images, const EmbedOptions& options);
  // The vision tower's last hidden states, one [patches, hidden] matrix per image.
  virtual std::vector<Matrix> image_hidden_states(const std::vector<ImageInput>& images);

  // Generating models (info().capabilities.generate). Runs the requests together (sequences join
  // as the KV cache has room and leave as they finish), calling on_token for each new token.
  virtual std::vector<GenerationResult> generate(const std::vector<GenerationRequest>& requests,
                                                 const TokenCallback& on_token = {});
  // The checks generate() makes of one request (ids, images, options, whether it can ever fit the
  // KV cache), alone: throws il::Error saying what is wrong.
  virtual void check_generation_request(const GenerationRequest& request);
  // Incremental generation, for callers that keep feeding a running batch (the server's
  // scheduler, the ocr command). submit_generation checks and queues a request (throws il::Error
  // saying what is wrong; nothing is queued then); step_generation admits what fits the KV cache
  // (vision and prefill of the newcomers) and runs one decode step for the others, returning the
  // tokens produced; a finished request's result is taken once. cancel_generation forgets a
  // request (queued or running: its pages are free at once). When a step throws (a device
  // error), every request in flight is dropped and the error rethrown: the engine stays usable.
  virtual GenerationId submit_generation(GenerationRequest request);
  virtual std::vector<GenerationEvent> step_generation();
  virtual GenerationResult take_generation_result(GenerationId id);
  virtual void cancel_generation(GenerationId id);
  virtual GenerationLoad generation_load() const;

  // Multimodal generating models: an encoded image (JPEG, PNG, WebP) decoded and preprocessed as
  // the folder's image processor does, into the rows a prompt's image takes (transformers'
  // pixel_values and image_grid_thw). Const and thread-safe (decode on worker threads). `mode`:
  // one of ModelInfo::ocr_modes for models that have them ("" the default; DeepSeek-OCR v1:
  // gundam, tiny, small, base, large); throws il::Error naming the modes otherwise.
  virtual PatchImage load_prompt_image(const std::vector<std::uint8_t>& bytes, std::string_view name,
                                       std::string_view mode = {}) const;
  // Multimodal generating models: a prompt holding one image token per image (as a chat template
  // renders them) with each expanded to the image's count of tokens (t · h · w / merge²), as the
  // model's processor does. Throws il::Error when the placeholders and the images disagree.
  virtual std::vector<int32_t> expand_image_placeholders(const std::vector<int32_t>& ids,
                                                         const std::vector<PatchImage>& images) const;
  // OCR models (capabilities.ocr): the request that reads one page for a task ("text", "table",
  // "formula"): the model's prompt around the page's image tokens, and its OCR decoding defaults
  // (greedy, the anti-loop guard; docs/glm-ocr.md). The caller may change options after.
  virtual GenerationRequest ocr_request(PatchImage page, std::string_view task) const;

  // The vision tower's output rows for images (what a multimodal prompt's image tokens take),
  // one matrix per image.
  virtual std::vector<Matrix> vision_rows(const std::vector<PatchImage>& images);
  // DeepSeek-OCR pages: SAM's output after its stride-2 convolutions, one matrix per view (each
  // page's views in order: its tiles, then its global view), one row per position, row-major.
  virtual std::vector<Matrix> sam_features(const std::vector<PatchImage>& pages);
  // The logits of each prompt's last position (one row of vocab values per request).
  virtual Matrix prompt_logits(const std::vector<GenerationRequest>& requests);
  // Block-diffusion models (DiffusionGemma): the prompt encoded into a fresh cache, then one
  // denoising forward of `canvas` (canvas_length ids) after it: its softcapped logits, one row of
  // vocab values per canvas position. sc_logits: null, or canvas_length rows of vocab values,
  // the self-conditioning logits of a previous step.
  virtual Matrix canvas_logits(const std::vector<int32_t>& prompt, const std::vector<int32_t>& canvas,
                               const Matrix* sc_logits);

  // How many threads may call the encoder calls (embed, hidden_states, score, token_vectors,
  // late_interaction, embed_images, image_hidden_states) at once: each call runs its passes on a
  // lane of its own (EngineOptions::lanes). Everything else: one thread.
  virtual std::size_t lanes() const { return 1; }
  // CUDA graphs captured so far (one per program and batch-shape bucket, at most 256 per
  // engine and lane; each holds some host and device memory); 0 on the CPU. Any thread.
  virtual std::size_t cuda_graphs() const { return 0; }
  // The device's cumulative energy counter in joules, where the backend reads one (an NVIDIA GPU
  // whose driver counts energy); nothing on the CPU. A difference over a span of work is its
  // energy. Same thread as the calls above.
  virtual std::optional<double> device_energy_joules() { return std::nullopt; }
};

}  // namespace il
