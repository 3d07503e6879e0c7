// The tokenizer pipeline, in the order of the library's TokenizerImpl::encode: added tokens in
// the raw text, normalisation of the rest, added tokens in the normalised text, pre-tokenization,
// the model, truncation, the post-processor.
#include "text/tokenizer.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "io/json_util.h"
#include "io/regular_file.h"
#include "text/added_vocabulary.h"
#include "text/decoders.h"
#include "text/json_util.h"
#include "text/models/model.h"
#include "text/normalizers.h"
#include "text/post_processors.h"
#include "text/pre_tokenizers.h"
#include "text/token_sequence.h"

namespace il::text {
namespace {

// Per-thread scratch space: encode() is const and thread-safe, and reuses these buffers so a warm
// thread does not allocate per token.
struct Workspace {
  NormalizedString piece;
  PreTokenizedString pre[2];
  std::vector<AddedSplit> raw_splits;
  std::vector<AddedSplit> normalized_splits;
  std::vector<ModelToken> model_tokens;
  struct Group {
    std::size_t split;        // index into the pre-tokenized splits
    std::size_t first_token;  // its first token in model_tokens
  };
  std::vector<Group> groups;
  std::vector<TokenSequence> seqs;
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

void check_input(std::string_view text, const char* which) {
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    throw make_error("tokenizer: the ", which, " text has ", text.size(),
                     " bytes, more than 4 GiB");
  }
  if (const auto bad = unicode::find_invalid_utf8(text)) {
    throw make_error("tokenizer: the ", which, " text is not valid UTF-8 (byte ", *bad, " of ",
                     text.size(), ")");
  }
}

}  // namespace

struct Tokenizer::Impl {
  std::string source;
  std::unique_ptr<Model> model;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  AddedVocabulary added;

  // stop_at > 0: stop tokenizing once the sequence has that many tokens, walking the words
  // from the end that truncation keeps (see encode()).
  void encode_sequence(std::string_view text, int32_t type_id, int8_t sequence_id,
                       std::size_t stop_at, TruncationDirection direction, Workspace& w,
                       PreTokenizedString& pre, TokenSequence& out) const;
  Encoding encode(std::string_view first, const std::string_view* second,
                  const EncodeOptions& options) const;
};

void Tokenizer::Impl::encode_sequence(std::string_view text, int32_t type_id, int8_t sequence_id,
                                      std::size_t stop_at, TruncationDirection direction,
                                      Workspace& w, PreTokenizedString& pre,
                                      TokenSequence& out) const {
  pre.clear();
  if (added.has_raw_tokens()) {
    added.split(text, false, w.raw_splits);
  } else {
    w.raw_splits.assign(1, {0, static_cast<uint32_t>(text.size()), -1});
  }
  for (const AddedSplit& r : w.raw_splits) {
    w.piece.reset(text.substr(r.begin, r.end - r.begin), r.begin);
    if (r.id >= 0) {
      pre.append(w.piece, 0, w.piece.text().size(), r.id);
      continue;
    }
    if (normalizer) normalizer->normalize(w.piece);
    if (!added.has_normalized_tokens()) {
      pre.append(w.piece, 0, w.piece.text().size(), -1);
      continue;
    }
    added.split(w.piece.text(), true, w.normalized_splits);
    for (const AddedSplit& n : w.normalized_splits) pre.append(w.piece, n.begin, n.end, n.id);
  }
  if (pre_tokenizer) pre_tokenizer->pre_tokenize(pre);

  // The words' tokens go to w.model_tokens (added tokens as one token with an empty range), one
  // group per word, in the order the words are visited.
  const auto splits = pre.splits();
  const bool backwards = stop_at > 0 && direction == TruncationDirection::kLeft;
  w.model_tokens.clear();
  w.groups.clear();
  std::size_t count = 0;
  for (std::size_t k = 0; k < splits.size(); ++k) {
    const std::size_t index = backwards ? splits.size() - 1 - k : k;
    const auto& s = splits[index];
    w.groups.push_back({index, w.model_tokens.size()});
    if (s.token_id >= 0) {
      w.model_tokens.push_back({s.token_id, 0, 0});
      ++count;
      continue;  // the library only checks the limit after a word the model tokenized
    }
    const std::size_t before = w.model_tokens.size();
    model->tokenize(pre.text(s), w.model_tokens);
    count += w.model_tokens.size() - before;
    if (stop_at > 0 && count >= stop_at) break;
  }
  out.clear();
  out.reserve(count);
  for (std::size_t g = 0; g < w.groups.size(); ++g) {
    const std::size_t k = backwards ? w.groups.size() - 1 - g : g;
    const auto& s = splits[w.groups[k].split];
    const std::size_t first = w.groups[k].first_token;
    const std::size_t last =
        k + 1 < w.groups.size() ? w.groups[k + 1].first_token : w.model_tokens.size();
    if (s.token_id >= 0) {
      const Alignment a = pre.original_range(s.begin, s.end);
      out.push(s.token_id, type_id, {a.begin, a.end}, 0, sequence_id, pre.text(s));
      continue;
    }
    for (std::size_t i = first; i < last; ++i) {
      const ModelToken& t = w.model_tokens[i];
      const Alignment a = pre.original_range(s.begin + t.begin, s.begin + t.end);
      out.push(t.id, type_id, {a.begin, a.end}, 0, sequence_id,
               model->id_to_token(t.id).value_or(std::string_view()));
    }
  }
}

Encoding Tokenizer::Impl::encode(std::string_view first, const std::string_view* second,
                                 const EncodeOptions& options) const {
  check_input(first, "first");
  if (second != nullptr) check_input(*second, "second");
  Workspace& w = workspace();
  const std::size_t n_seqs = second != nullptr ? 2 : 1;
  w.seqs.resize(n_seqs);
  // With truncation on, the library stops tokenizing a sequence once it holds max_length tokens
  // (checked after each word the model tokenized, walking from the end that truncation keeps).
  // For a pair, truncation then sees these shortened lengths, which changes how LongestFirst
  // shares the budget; for a single sequence the kept tokens are the same, but a word past the
  // limit that the model would refuse (no unk_id) is never reached. So we stop at the same
  // place. (Measured on tokenizers 0.23.2 with thousands of random pairs and on Unigram files
  // without unk_id.)
  const std::size_t stop_at = options.truncate ? options.max_length : 0;
  // Except the first sequence under OnlySecond, which the library tokenizes whole: a pair whose
  // second side is empty is then refused, not fitted (measured on the byte-level BPE files).
  const std::size_t stop_first =
      options.strategy == TruncationStrategy::kOnlySecond ? 0 : stop_at;
  encode_sequence(first, 0, 0, stop_first, options.direction, w, w.pre[0], w.seqs[0]);
  if (second != nullptr) {
    encode_sequence(*second, 1, 1, stop_at, options.direction, w, w.pre[1], w.seqs[1]);
  }

  if (options.max_length > 0) {
    const std::size_t added_tokens =
        options.add_special_tokens && post_processor ? post_processor->added_tokens(n_seqs == 2)
                                                     : 0;
    const std::size_t total = w.seqs[0].size() + (n_seqs == 2 ? w.seqs[1].size() : 0);
    if (total + added_tokens > options.max_length) {
      if (!options.truncate) {
        throw make_error("tokenizer: the input has ", total + added_tokens, " tokens (",
                         added_tokens, " of them special), more than the maximum of ",
                         options.max_length);
      }
      if (options.max_length < added_tokens) {
        throw make_error("tokenizer: max_length ", options.max_length,
                         " leaves no room for the ", added_tokens, " special tokens");
      }
      truncate_sequences(w.seqs[0], n_seqs == 2 ? &w.seqs[1] : nullptr,
                         options.max_length - added_tokens, options.strategy, options.direction);
    }
  }

  const std::string_view texts[2] = {first, second != nullptr ? *second : std::string_view()};
  if (post_processor) {
    post_processor->process(w.seqs, options.add_special_tokens,
                            std::span<const std::string_view>(texts, n_seqs));
  }

  Encoding e;
  std::size_t n = 0;
  for (const TokenSequence& s : w.seqs) n += s.size();
  e.ids.reserve(n);
  e.type_ids.reserve(n);
  e.offsets.reserve(n);
  e.special_tokens_mask.reserve(n);
  e.sequence_ids.reserve(n);
  for (const TokenSequence& s : w.seqs) {
    e.ids.insert(e.ids.end(), s.ids.begin(), s.ids.end());
    e.type_ids.insert(e.type_ids.end(), s.type_ids.begin(), s.type_ids.end());
    e.offsets.insert(e.offsets.end(), s.offsets.begin(), s.offsets.end());
    e.special_tokens_mask.insert(e.special_tokens_mask.end(), s.special_tokens_mask.begin(),
                                 s.special_tokens_mask.end());
    e.sequence_ids.insert(e.sequence_ids.end(), s.sequence_ids.begin(), s.sequence_ids.end());
  }
  return e;
}

// ---- loading ----

Tokenizer Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  // A regular file only: a FIFO in its place would block the read forever.
  return from_json_string(io::read_regular_file(tokenizer_json), tokenizer_json.string());
}

Tokenizer Tokenizer::from_json_string(std::string_view json, const std::string& source_name) {
  auto impl = std::make_unique<Impl>();
  impl->source = source_name;
  const Json doc = io::parse_json_limited(json, source_name);  // nesting bounded, as for every file
  const JsonRef root(impl->source, doc, "");
  root.expect_object();
  if (const auto version = root.find("version")) {
    if (version->as_string() != "1.0") {
      version->fail("\"" + version->as_string() + "\" is not supported (supported: 1.0)");
    }
  }
  // The truncation and padding sections are the library's defaults for its own callers; the
  // engine passes its limits with every call, so they are read past.
  impl->model = make_model(root["model"]);
  if (const auto j = root.find("normalizer")) impl->normalizer = make_normalizer(*j);
  if (const auto j = root.find("pre_tokenizer")) impl->pre_tokenizer = make_pre_tokenizer(*j);
  if (const auto j = root.find("post_processor")) impl->post_processor = make_post_processor(*j);
  if (const auto j = root.find("decoder")) impl->decoder = make_decoder(*j);
  if (const auto j = root.find("added_tokens")) {
    impl->added.load(*j, *impl->model, impl->normalizer.get());
  }
  return Tokenizer(std::move(impl));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

// ---- queries ----

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  return impl_->encode(text, nullptr, options);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second,
                                const EncodeOptions& options) const {
  return impl_->encode(first, &second, options);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    std::string_view token;
    if (const AddedToken* t = impl_->added.token(id)) {
      token = t->decoded;
    } else if (const auto m = impl_->model->id_to_token(id)) {
      token = *m;
    } else {
      continue;  // unknown ids are left out, as the library does
    }
    // The library tests the written form, so a normalised special token whose form changed is
    // not skipped.
    if (skip_special_tokens && impl_->added.is_special(token)) continue;
    tokens.emplace_back(token);
  }
  std::string out;
  if (impl_->decoder) {
    impl_->decoder->decode_chain(tokens);
    for (const auto& t : tokens) out += t;
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out += ' ';
      out += tokens[i];
    }
  }
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto id = impl_->added.token_to_id(token)) return id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = impl_->added.token(id)) return t->decoded;
  if (const auto m = impl_->model->id_to_token(id)) return std::string(*m);
  return std::nullopt;
}

std::size_t Tokenizer::vocab_size() const {
  return impl_->model->vocab_size() + impl_->added.count_not_in(*impl_->model);
}

std::string Tokenizer::model_type() const { return impl_->model->type(); }

std::size_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  return impl_->post_processor ? impl_->post_processor->added_tokens(pair) : 0;
}

}  // namespace il::text
