// The tokenizer pipeline, in the order of the library's TokenizerImpl::encode: added tokens in
// the raw text, normalisation of the rest, added tokens in the normalised text, pre-tokenization,
// the model, truncation, the post-processor.
#include "text/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <span>
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
#include "text/scratch.h"
#include "text/token_sequence.h"

namespace il::text {
namespace {

// Per-thread scratch space: encode() is const and thread-safe, and reuses these buffers so a warm
// thread does not allocate per token. Buffers a large input grew are freed after the call (see
// text/scratch.h).
struct Workspace {
  NormalizedString piece;
  SplitWalkScratch walk;
  std::vector<AddedSplit> raw_splits;
  std::vector<AddedSplit> normalized_splits;
  std::vector<ModelToken> word_tokens;
  std::vector<uint32_t> group_sizes;  // tokens per visited word, when visiting backwards
  std::vector<TokenSequence> seqs;

  // The buffers of the sequences' text: freed (when large) before the tokens are assembled.
  void release_large_text() {
    piece.release_large();
    walk.release_large();
    release_if_large(raw_splits);
    release_if_large(normalized_splits);
    release_if_large(word_tokens);
    release_if_large(group_sizes);
  }
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

// Reverses the order of the groups of consecutive elements (sizes given in their current
// order), keeping the order inside each group.
template <typename T>
void reverse_groups(std::vector<T>& v, std::span<const uint32_t> sizes) {
  std::reverse(v.begin(), v.end());
  auto it = v.begin();
  for (std::size_t g = sizes.size(); g-- > 0;) {
    std::reverse(it, it + sizes[g]);
    it += sizes[g];
  }
}

// The sequence-text range of a token's bytes [begin, end) of its word: from the start of the
// first byte's source to the end of the last's, as the library converts offsets. A token that
// covers no byte of the word (a byte-fallback token of a continuing-subword prefix or suffix,
// which the library cannot convert at all) gets the empty range where its bytes would be.
Alignment source_range(std::span<const Alignment> align, uint32_t begin, uint32_t end) {
  if (begin < end && end <= align.size()) return {align[begin].begin, align[end - 1].end};
  const uint32_t at = begin < align.size() ? align[begin].begin : align.back().end;
  return {at, at};
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
                       TokenSequence& out) const;
  Encoding encode(std::string_view first, const std::string_view* second,
                  const EncodeOptions& options) const;
};

// The pipeline, one piece of text at a time: the added tokens split the raw text; each part
// between them is normalised, split by the normalised added tokens, and walked through the
// pre-tokenizer, the model tokenizing each word as it is reached. Only the text of one part and
// the tokens so far are held at once.
void Tokenizer::Impl::encode_sequence(std::string_view text, int32_t type_id, int8_t sequence_id,
                                      std::size_t stop_at, TruncationDirection direction,
                                      Workspace& w, TokenSequence& out) const {
  out.clear();
  const bool backwards = stop_at > 0 && direction == TruncationDirection::kLeft;
  const bool spaces = post_processor && post_processor->trims_offsets();
  w.group_sizes.clear();
  std::size_t count = 0;

  auto push_added = [&](int32_t id, Alignment a, std::string_view matched) {
    out.ids.push_back(id);
    out.offsets.emplace_back(a.begin, a.end);
    if (spaces) out.spaces.push_back(byte_level_spaces(matched));
    if (backwards) w.group_sizes.push_back(1);
    ++count;  // the library only checks the limit after a word the model tokenized
  };
  // Returns false once the limit is reached.
  auto word = [&](std::string_view t, std::span<const Alignment> align) {
    w.word_tokens.clear();
    model->tokenize(t, w.word_tokens);
    for (const ModelToken& m : w.word_tokens) {
      out.ids.push_back(m.id);
      const Alignment a = source_range(align, m.begin, m.end);
      out.offsets.emplace_back(a.begin, a.end);
      if (spaces) {
        out.spaces.push_back(byte_level_spaces(model->id_to_token(m.id).value_or("")));
      }
    }
    if (backwards) w.group_sizes.push_back(static_cast<uint32_t>(w.word_tokens.size()));
    count += w.word_tokens.size();
    return !(stop_at > 0 && count >= stop_at);
  };
  auto walk = [&](std::string_view t, std::span<const Alignment> align) {
    if (t.empty()) return true;
    if (!pre_tokenizer) return word(t, align);
    return pre_tokenizer->walk(t, align, backwards, w.walk, word);
  };

  if (added.has_raw_tokens()) {
    added.split(text, false, w.raw_splits);
  } else {
    w.raw_splits.assign(1, {0, static_cast<uint32_t>(text.size()), -1});
  }
  const std::size_t n_raw = w.raw_splits.size();
  for (std::size_t i = 0; i < n_raw; ++i) {
    const AddedSplit r = w.raw_splits[backwards ? n_raw - 1 - i : i];
    const std::string_view part = text.substr(r.begin, r.end - r.begin);
    if (r.id >= 0) {
      if (!part.empty()) push_added(r.id, {r.begin, r.end}, part);
      continue;
    }
    w.piece.reset(part, r.begin);
    if (normalizer) normalizer->normalize(w.piece);
    const std::string_view normalized = w.piece.text();
    const auto align = w.piece.alignments();
    if (!added.has_normalized_tokens()) {
      if (!walk(normalized, align)) break;
      continue;
    }
    added.split(normalized, true, w.normalized_splits);
    const std::size_t n = w.normalized_splits.size();
    bool stopped = false;
    for (std::size_t k = 0; k < n && !stopped; ++k) {
      const AddedSplit s = w.normalized_splits[backwards ? n - 1 - k : k];
      if (s.begin >= s.end) continue;
      const std::string_view t = normalized.substr(s.begin, s.end - s.begin);
      const auto a = align.subspan(s.begin, s.end - s.begin);
      if (s.id >= 0) {
        push_added(s.id, {a.front().begin, a.back().end}, t);
      } else {
        stopped = !walk(t, a);
      }
    }
    if (stopped) break;
  }
  // Words were visited last first: put their groups of tokens back in text order.
  if (backwards) {
    reverse_groups(out.ids, w.group_sizes);
    reverse_groups(out.offsets, w.group_sizes);
    if (spaces) reverse_groups(out.spaces, w.group_sizes);
  }
  w.release_large_text();
  out.complete(type_id, sequence_id);
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
  encode_sequence(first, 0, 0, stop_first, options.direction, w, w.seqs[0]);
  if (second != nullptr) {
    encode_sequence(*second, 1, 1, stop_at, options.direction, w, w.seqs[1]);
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
  for (TokenSequence& s : w.seqs) s.release_large();
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
