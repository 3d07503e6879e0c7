// What a built model is to the rest of the engine: its plan, what it can do, the inputs it
// accepts and how it describes itself. Nothing outside models/ reads an architecture's config;
// the runtime, CLI, bench and server read this.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferencelayer/engine.h"
#include "io/st_modules.h"
#include "models/colbert_config.h"
#include "models/diffusion_gemma_config.h"
#include "plan/plan.h"

namespace il::text {
class Tokenizer;
}

namespace il::models {

// The token inputs a model accepts.
struct InputLimits {
  int vocab = 0;            // token ids 0 .. vocab - 1
  int type_vocab = 0;       // segment ids 0 .. type_vocab - 1; 0: no segment table (ids must be 0)
  std::size_t max_tokens = 0;  // per sequence (the position table or the trained context)
};

// How a scored pair becomes one text, for models scored through a prompt rather than a pair
// encoding (Qwen3-Reranker: its model card's chat template, the answer read from the last
// token). The text is prefix + body + suffix, body = `body` with {instruction}, {query} and
// {document} replaced; each part is tokenized alone without special tokens, and only the body is
// truncated to fit.
struct PairTemplate {
  std::string prefix, body, suffix;
  std::string default_instruction;
};

// An image model's input (models/siglip.h): pixel_values of channels × height × width, cut into
// patch × patch tiles (the runtime's patch rows, plan::Batch::patches).
struct ImageGeometry {
  int channels = 0, height = 0, width = 0, patch = 0;
  int grid_rows() const { return patch ? height / patch : 0; }
  int grid_cols() const { return patch ? width / patch : 0; }
  std::size_t patches() const { return static_cast<std::size_t>(grid_rows()) * static_cast<std::size_t>(grid_cols()); }
  std::size_t patch_dim() const { return static_cast<std::size_t>(channels) * patch * patch; }
};

// A generating model (capabilities.generate; runtime/generator.h drives it). Programs:
// "prefill" (a batch of whole prompts: their keys and values into the cache, causal attention
// among the batch's own tokens) and "decode" (any tokens after their cached entries: attention
// over the cache), both ending in the final norm's token rows; "logits" (each sequence's last
// row → output "logits", vocab columns, sequence rows); with images, "vision" (the batch's patch
// rows → `image_rows`, which "prefill" injects at the image tokens).
// A prompt's rotary positions: axes × length values, axis-major (plan::Batch::rope_positions'
// layout), and the offset of the tokens generated after it (the token at cache index i sits at
// i + delta on every axis).
struct PromptPositions {
  std::vector<int32_t> axes;
  int32_t delta = 0;
};

// DeepSeek-OCR's vision over square views (models/deepseek_ocr_vision.h; runtime/view_vision.h
// drives it). A page is views of patch rows (its tiles, then its global view); the programs run
// in turn, each on its own batch: "sam" (one token per patch, a sequence per view: SAM's blocks
// and neck into the persistent `neck` rows), "sam_down1" and "sam_down2" (one token per output
// position of a stride-2 3 × 3 convolution, gathered from the previous rows: `down1`, `down2`),
// "encoder" (a sequence per view: the view's `down2` rows, then its learned queries; output
// `rows`, one per token, projected to the decoder's width). The page's rows for the decoder are
// each view's query rows, tiles first, then the global view's, then `separator`.
struct ViewVisionSpec {
  std::size_t patch = 0;                  // pixels per patch side (patch rows: 3 · patch² values)
  std::size_t native_side = 0;            // the position table's side in patches (the native view)
  std::vector<std::size_t> sides;         // view sides in patches the plan holds tables for
  std::vector<std::size_t> position_rows; // per side: its first row in the position table
  plan::BufferId neck = -1, down1 = -1, down2 = -1;  // persistent
  std::size_t neck_cols = 0, down1_cols = 0, down2_cols = 0;
  plan::View rows;                        // "encoder"'s output rows (decoder width)
  // The learned queries a view of P down2 rows takes: `small` of them (table rows 0 ..) when
  // P ≤ small_max_patches, else `large` (table rows small ..).
  std::size_t queries_small = 0, queries_large = 0, small_max_patches = 0;
  std::vector<float> separator;           // the row after a page's views
  // DeepSeek-OCR (v1): "encoder" is CLIP over each view's class token and SAM rows (batch tokens:
  // rows of the embedding table, the side's block from clip_position_rows[side index] on: the
  // class row, then one per SAM position; gather: −1, then the SAM rows), and a view gives one
  // row per SAM position (its class row is
  // dropped). A page's rows are grids with `newline` after each grid row: the tiles as one grid
  // of tile_grid (columns, rows) tiles, then the global view, then the separator.
  bool clip = false;
  std::vector<std::size_t> clip_position_rows;
  std::vector<float> newline;

  // A view of `side` patches after SAM's two stride-2 convolutions (3 × 3, padding 1): a side of
  // ⌊(side − 1) / 2⌋ + 1, twice.
  static std::size_t sam_side(std::size_t side) { return ((side - 1) / 2) / 2 + 1; }
  std::size_t queries_for(std::size_t sam_rows) const {
    return sam_rows <= small_max_patches ? queries_small : queries_large;
  }
  // The decoder rows of a page of views of these sides (v1: tiles on a grid of tile_grid
  // columns × rows): each view's queries, then the separator; v1 its grids with their newlines.
  std::size_t page_rows(const std::vector<int>& sides, std::array<int, 2> tile_grid = {}) const {
    if (clip) {
      if (sides.empty()) return 1;
      const std::size_t n = sam_side(static_cast<std::size_t>(std::max(sides.back(), 1)));
      std::size_t rows = 1 + n * (n + 1);
      if (sides.size() > 1) {
        const std::size_t m = sam_side(static_cast<std::size_t>(std::max(sides.front(), 1)));
        rows += static_cast<std::size_t>(std::max(tile_grid[1], 0)) * m *
                (static_cast<std::size_t>(std::max(tile_grid[0], 0)) * m + 1);
      }
      return rows;
    }
    std::size_t rows = 1;
    for (int s : sides) {
      const std::size_t p = sam_side(static_cast<std::size_t>(s > 0 ? s : 1));
      rows += queries_for(p * p);
    }
    return rows;
  }
};

struct GenerationSpec {
  // Persistent KV cache buffers, one per layer (keys in the first half of the columns, values in
  // the second); the runtime gives them their rows (plan::Plan::set_fixed_rows) before building
  // an executor: cache entries, in pages of its choosing.
  std::vector<plan::BufferId> kv_cache;
  std::size_t kv_cols = 0;  // per buffer: 2 · kv_heads · head_dim
  // The vision program's output (persistent, the runtime sizes it: rows = patch tokens / merge²
  // of the largest vision batch); -1 without images.
  plan::BufferId image_rows = -1;
  std::size_t image_row_divisor = 1;  // patch tokens per output row (2 × 2 merge: 4)
  // Token ids: the folder's end ids (generation_config.json eos_token_id; any of them stops a
  // sequence), the image placeholder; -1 where none.
  std::vector<int32_t> end_ids;
  int32_t image_token = -1, pad_token = -1;
  // Rotary positions: 3 axes (M-RoPE, text and image tokens numbered as GlmOcrModel.get_rope_index
  // does) or 1.
  std::size_t position_axes = 1;
  // With 3 axes: how a prompt's tokens are numbered from its ids and its images' [t, h, w] grids
  // (the model's rule; throws il::Error when the ids' image runs and the grids disagree).
  std::function<PromptPositions(std::span<const int32_t> ids, std::span<const std::array<int, 3>> grids)>
      prompt_positions;
  std::size_t spatial_merge = 1;
  // Pixel inputs of the vision program: one row of patch_dim values per patch (the processor's
  // pixel_values), images as [t, h, w] grids of patches.
  std::size_t patch_dim = 0;
  std::size_t patch_size = 0, temporal_patch = 1;  // patch_dim = 3 · temporal_patch · patch_size²
  // OCR models: the prompt ids that read one page (as its processor made it) for a task (GLM-OCR:
  // "text", "table", "formula"; DeepSeek-OCR: "markdown", "text", "figure", "describe"; "" the
  // model's default; throws il::Error naming the choices otherwise), through the folder's
  // tokenizer. Empty for other models.
  std::function<std::vector<int32_t>(const text::Tokenizer& tokenizer, const PatchImage& page, std::string_view task)>
      ocr_prompt;
  std::vector<std::string> ocr_tasks;  // what ocr_prompt takes, the default first
  bool ocr_grounding = false;          // its output may hold grounded blocks (ModelInfo::ocr_grounding)
  bool plain_chat = false;             // ModelInfo::plain_chat
  std::size_t max_positions = 0;  // the trained context (prompt + new tokens)
  std::vector<std::string> notes;  // what the loader left out and why (info)
  std::optional<ViewVisionSpec> views;  // DeepSeek-OCR: the vision programs over square views
};

// A block-diffusion model (DiffusionGemma; runtime/diffusion_generator.h drives it). Programs:
// "encode" (a prompt or a committed canvas: its keys and values into the cache, causal, sliding
// layers over a window) and "canvas" (canvases of canvas_length tokens → output "canvas_logits",
// f32 softcapped logits, token rows; each canvas attends bidirectionally to its sequence's cache
// and to itself; self-conditioning from the rows of `sc_logits`, a row of −inf meaning none).
struct DiffusionSpec {
  std::size_t canvas_length = 0;
  std::size_t vocab = 0;
  // Per layer: its persistent KV buffer (keys in the first half of the columns) and width.
  std::vector<plan::BufferId> kv_cache;
  std::vector<std::size_t> kv_cols;
  std::size_t window = 0;  // sliding layers: they read the last window − 1 entries before a token
  // f32 [tokens, vocab], persistent (the runtime sizes it to its largest canvas batch): the
  // previous step's processed logits of each canvas row, written before a canvas run.
  plan::BufferId sc_logits = -1;
  DiffusionSettings defaults;  // generation_config.json
  std::size_t max_positions = 0;
  std::vector<std::string> notes;  // what the loader left out and why (info)
};

struct BuiltModel {
  plan::Plan plan;
  Capabilities capabilities;
  InputLimits limits;
  // Description (inferencelayer info, /info).
  std::string model_type, architecture, layout;
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, intermediate = 0;
  std::vector<std::string> notes;  // what the folder says that the loader reads differently (info)
  Activation act = Activation::kNone;
  bool random_weights = false;  // config marks a demo / fixture folder

  std::size_t hidden_size = 0;       // width of output "hidden"
  std::vector<std::string> labels;   // score outputs' names, one per column of "scores"
  std::optional<PairTemplate> pair_template;

  io::SentenceTransformerInfo st;
  std::size_t embedding_dim = 0;
  PoolingMode pooling = PoolingMode::kMean;  // the folder's default
  bool normalize = false;                     // the folder's default
  std::string stored_dtype = "F32";           // what most checkpoint tensors are stored as
  std::size_t stored_bytes = 0;               // tensor bytes in the checkpoint
  // Multi-vector (PyLate ColBERT) folders: how queries and documents are tokenized; program
  // "tokens" writes output "tokens" (one normalised vector per token, embedding_dim wide).
  std::optional<ColbertConfig> colbert;
  // Image models (capabilities.image_input): program "image_encode" writes output "image_hidden"
  // (one row per patch), program "image_head" output "image_embedding" (one row per image,
  // image_embedding_dim wide; 0: no head).
  std::optional<ImageGeometry> image;
  std::size_t image_embedding_dim = 0;
  // Texts tokenized by the engine are padded to `first` tokens with id `second` (SigLIP's
  // text tower, which attends to its pad tokens); token-id inputs are taken as given.
  std::optional<std::pair<std::size_t, int32_t>> pad_texts;
  // Image–text models (SigLIP): the stored logit_scale and logit_bias parameters.
  std::optional<std::pair<float, float>> logit;
  std::optional<GenerationSpec> generation;
  std::optional<DiffusionSpec> diffusion;
};

}  // namespace il::models
