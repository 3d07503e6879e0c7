// DeBERTa-v2 / v3 against transformers (tools/oracle/make_deberta_fixtures.py): the four folders
// (one with the ConvLayer after the first layer: its window must stop at each sequence's ends, which
// the ragged batches below check)
// from text and raw ids (pooled vectors, scores, hidden states), one at a time, in one ragged batch
// and split over small batches; the relative-position rows against transformers' own
// build_relative_position; what the models say about themselves; configs refused by field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"
#include "inferencelayer/engine.h"
#include "models/deberta.h"
#include "models/deberta_config.h"
#include "models/registry.h"
#include "ops/disentangled_attention.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;  // as oracle_test.cc
constexpr double kBatchTolerance = 1e-5;

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class DebertaOracle : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fixture_ = load_fixture(GetParam());
    engine_ = Engine::load(fixture_.dir, {});
  }
  Matrix run(Engine& e, const std::vector<TokenInput>& inputs) {
    return fixture_.kind == "embedding" ? e.embed(inputs, {}) : e.score(inputs);
  }
  const std::vector<float>& expected(const FixtureCase& c) const {
    return fixture_.kind == "embedding" ? c.pooled : c.scores;
  }
  TokenInput tokenize(const FixtureCase& c) const {
    return c.pair ? engine_->tokenize_pair(c.text, *c.pair) : engine_->tokenize(c.text);
  }
  Fixture fixture_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(DebertaOracle, TokenizerMatchesTransformers) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const TokenInput got = tokenize(c);
    EXPECT_EQ(got.ids, c.input.ids) << "case " << i << ": " << c.text;
    EXPECT_EQ(got.type_ids, c.input.type_ids) << "case " << i;
  }
}

TEST_P(DebertaOracle, TextCasesOneAtATime) {
  for (std::size_t i = 0; i < fixture_.cases.size(); ++i) {
    const FixtureCase& c = fixture_.cases[i];
    const Matrix out = run(*engine_, {tokenize(c)});
    ASSERT_EQ(out.cols, expected(c).size()) << "case " << i;
    EXPECT_LE(max_abs(out.row(0), expected(c).data(), out.cols), kTolerance) << "case " << i << ": " << c.text;
  }
}

TEST_P(DebertaOracle, TokenIdCasesOneAtATime) {
  ASSERT_FALSE(fixture_.id_cases.empty());
  for (std::size_t i = 0; i < fixture_.id_cases.size(); ++i) {
    const FixtureCase& c = fixture_.id_cases[i];
    const Matrix out = run(*engine_, {c.input});
    ASSERT_EQ(out.cols, expected(c).size());
    EXPECT_LE(max_abs(out.row(0), expected(c).data(), out.cols), kTolerance)
        << "id case " << i << " (" << c.input.ids.size() << " tokens)";
  }
}

TEST_P(DebertaOracle, HiddenStatesMatchTransformers) {
  std::size_t checked = 0, longest = 0;
  for (const auto* list : {&fixture_.cases, &fixture_.id_cases})
    for (const FixtureCase& c : *list) {
      if (!c.hidden) continue;
      const auto out = engine_->hidden_states({c.input});
      ASSERT_EQ(out[0].rows, c.hidden->rows);
      ASSERT_EQ(out[0].cols, c.hidden->cols);
      EXPECT_LE(max_abs(out[0].data.data(), c.hidden->data.data(), out[0].data.size()), kTolerance)
          << c.input.ids.size() << " tokens";
      ++checked;
      longest = std::max(longest, c.input.ids.size());
    }
  EXPECT_GT(checked, 0u);
  // The fixture's point: distances past the log buckets' start and past the table's edge.
  EXPECT_GE(longest, 100u);
}

TEST_P(DebertaOracle, BatchInvariance) {
  const std::vector<TokenInput> inputs = all_inputs(fixture_);
  const Matrix together = run(*engine_, inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Matrix alone = run(*engine_, {inputs[i]});
    EXPECT_LE(max_abs(alone.row(0), together.row(i), together.cols), kBatchTolerance) << "input " << i;
    EXPECT_LE(max_abs(together.row(i), expected(i < fixture_.cases.size() ? fixture_.cases[i]
                                                                           : fixture_.id_cases[i - fixture_.cases.size()])
                                           .data(),
                      together.cols),
              kTolerance)
        << "batched input " << i;
  }
  EngineOptions small;
  small.max_batch_tokens = 130;  // the longest input is 128 tokens: many small batches
  auto split_engine = Engine::load(fixture_.dir, small);
  const Matrix split = run(*split_engine, inputs);
  EXPECT_LE(max_abs(split.data.data(), together.data.data(), together.data.size()), kBatchTolerance);
}

// The relative-table row of every distance the fixture records, from transformers'
// build_relative_position (and its p2c index, checked equal there).
TEST_P(DebertaOracle, RelativeRowsMatchTransformers) {
  const nlohmann::json e = read_json(fixture_.dir / "expected.json");
  const models::DebertaConfig c = models::parse_deberta_config(read_json(fixture_.dir / "config.json"), "config.json");
  ASSERT_TRUE(c.relative_attention);
  EXPECT_EQ(c.span, e.at("att_span").get<int>());
  const int n = e.at("rel_index_span").get<int>();
  const auto want = e.at("rel_index").get<std::vector<int>>();
  ASSERT_EQ(want.size(), static_cast<std::size_t>(2 * n + 1));
  for (int d = -n; d <= n; ++d)
    EXPECT_EQ(ops::deberta_rel_index(d, c.span, c.position_buckets, c.max_relative), want[static_cast<std::size_t>(d + n)])
        << "distance " << d;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DebertaOracle, ::testing::Values("deberta-embed", "deberta-ce", "deberta-v2-ce",
                                                                         "deberta-v2-conv-ce", "deberta-v2-embproj-ce"),
                         [](const auto& info) { return fixture_test_name(info.param); });

TEST(Deberta, DescribesItself) {
  {
    auto e = Engine::load(load_fixture("deberta-embed").dir, {});
    const ModelInfo& i = e->info();
    EXPECT_EQ(i.model_type, "deberta-v2");
    EXPECT_TRUE(i.capabilities.embed);
    EXPECT_FALSE(i.capabilities.score);
    EXPECT_EQ(i.pooling, PoolingMode::kMean);
    EXPECT_THROW(e->score({e->tokenize("a")}), Error);
  }
  auto e = Engine::load(load_fixture("deberta-v2-ce").dir, {});
  const ModelInfo& i = e->info();
  EXPECT_TRUE(i.capabilities.score);
  EXPECT_EQ(i.num_labels, 3);
  EXPECT_EQ(i.labels, (std::vector<std::string>{"contradiction", "entailment", "neutral"}));
}

// The v3 folder has no segment table: transformers ignores the pair template's type ids (1 for
// the second segment), and so does the engine — the same pair with all-zero types scores the same.
TEST(Deberta, SegmentIdsAreIgnoredWithoutATable) {
  auto e = Engine::load(load_fixture("deberta-ce").dir, {});
  TokenInput in = e->tokenize_pair("a question", "an answer");
  ASSERT_NE(std::count(in.type_ids.begin(), in.type_ids.end(), 1), 0);
  const Matrix a = e->score({in});
  std::fill(in.type_ids.begin(), in.type_ids.end(), 0);
  const Matrix b = e->score({in});
  EXPECT_EQ(a.row(0)[0], b.row(0)[0]);
}

nlohmann::json v3_config() {
  return nlohmann::json::parse(R"({"model_type": "deberta-v2", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512,
    "relative_attention": true, "position_buckets": 256, "max_relative_positions": -1, "pos_att_type": "p2c|c2p",
    "share_att_key": true, "norm_rel_ebd": "layer_norm", "position_biased_input": false, "type_vocab_size": 0})");
}

std::string refusal(const nlohmann::json& j) {
  try {
    (void)models::parse_deberta_config(j, "x/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DebertaConfig, ReadsTheV3Fields) {
  const models::DebertaConfig c = models::parse_deberta_config(v3_config(), "config.json");
  EXPECT_TRUE(c.relative_attention && c.c2p && c.p2c && c.share_att_key && c.norm_rel_ebd);
  EXPECT_FALSE(c.position_biased_input);
  EXPECT_EQ(c.max_relative, 512);  // -1: max_position_embeddings
  EXPECT_EQ(c.span, 256);
  EXPECT_EQ(c.scale_factor(), 3);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-7f);
  nlohmann::json list = v3_config();
  list["pos_att_type"] = {"c2p"};
  const models::DebertaConfig l = models::parse_deberta_config(list, "config.json");
  EXPECT_TRUE(l.c2p && !l.p2c);
  EXPECT_EQ(l.scale_factor(), 2);
}

// embedding_size: the tables' width (hidden where absent); p2p is read and, as in transformers'
// DebertaV2, neither computed nor counted in the scale.
TEST(DebertaConfig, ReadsEmbeddingSizeAndIgnoresP2p) {
  nlohmann::json j = v3_config();
  EXPECT_EQ(models::parse_deberta_config(j, "config.json").embedding_size, 64);
  j["embedding_size"] = 32;
  j["pos_att_type"] = "p2c|c2p|p2p";
  const models::DebertaConfig c = models::parse_deberta_config(j, "config.json");
  EXPECT_EQ(c.embedding_size, 32);
  EXPECT_TRUE(c.c2p && c.p2c && c.p2p_listed);
  EXPECT_EQ(c.scale_factor(), 3);
  const auto tensors = models::deberta_tensors(c);
  EXPECT_EQ(tensors.at("embeddings.word_embeddings.weight"), (std::vector<int64_t>{100, 32}));
  EXPECT_EQ(tensors.at("embeddings.embed_proj.weight"), (std::vector<int64_t>{64, 32}));
}

TEST(DebertaConfig, RefusesWhatIsNotImplementedNamingTheField) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"conv_kernel_size", 4}, {"embedding_size", 0}, {"pos_att_type", "p2x|c2p"}, {"norm_rel_ebd", "other"},
      {"attention_head_size", 8}, {"hidden_act", "mish"}};
  for (const auto& [field, value] : cases) {
    nlohmann::json j = v3_config();
    j[field] = value;
    const std::string msg = refusal(j);
    EXPECT_NE(msg.find("x/config.json"), std::string::npos) << field << ": " << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << field << ": " << msg;
  }
}

TEST(DebertaConfig, TheRegistryRowChecksWithTheDebertaParser) {
  const models::Architecture& a = models::find_architecture(v3_config(), "x/config.json");
  EXPECT_EQ(a.name, "deberta-v2");
  EXPECT_NO_THROW(a.check_config(v3_config(), "x/config.json"));
  nlohmann::json conv = v3_config();
  conv["conv_kernel_size"] = 3;
  EXPECT_NO_THROW(a.check_config(conv, "x/config.json"));
  conv["conv_groups"] = 5;  // does not divide hidden_size
  EXPECT_THROW(a.check_config(conv, "x/config.json"), Error);
}

// The ConvLayer's fields with transformers' defaults: groups 1, conv_act "tanh"; 0 or absent: none.
TEST(DebertaConfig, ReadsTheConvLayerFields) {
  nlohmann::json j = v3_config();
  EXPECT_EQ(models::parse_deberta_config(j, "config.json").conv_taps, 0);
  j["conv_kernel_size"] = 0;
  EXPECT_EQ(models::parse_deberta_config(j, "config.json").conv_taps, 0);
  j["conv_kernel_size"] = 5;
  models::DebertaConfig c = models::parse_deberta_config(j, "config.json");
  EXPECT_EQ(c.conv_taps, 5);
  EXPECT_EQ(c.conv_groups, 1);
  EXPECT_EQ(c.conv_act, Activation::kTanh);
  j["conv_groups"] = 2;
  j["conv_act"] = "gelu";
  c = models::parse_deberta_config(j, "config.json");
  EXPECT_EQ(c.conv_groups, 2);
  EXPECT_EQ(c.conv_act, Activation::kGeluErf);
}

// deberta-v3-base's geometry: every distance up to 511 maps into the 512 rows, symmetric around
// the span, and the same in f32 as in f64 (the bucket's ceil is not sitting on an integer, where
// torch's f32 and another evaluation could disagree).
TEST(DebertaRelativeRows, V3BaseTableIsOddAndStable) {
  for (int d = -511; d <= 511; ++d) {
    const int m = ops::deberta_rel_index(d, 256, 256, 512);
    ASSERT_GE(m, 0);
    ASSERT_LT(m, 512);
    if (d > 0) {
      EXPECT_EQ(m - 256, 256 - ops::deberta_rel_index(-d, 256, 256, 512)) << d;
    }
    const int a = std::abs(d);
    if (a > 128) {
      const double x = std::log(a / 128.0) / std::log(511.0 / 128.0) * 127.0;
      const int b = static_cast<int>(std::ceil(x)) + 128;
      EXPECT_EQ(m, std::clamp((d < 0 ? -b : b) + 256, 0, 511)) << d;
    } else {
      EXPECT_EQ(m, d + 256);
    }
  }
}

// The CUDA tensor-core form's column window covers every distance the batch can reach.
TEST(DisentangledWindow, CoversEveryDistanceOfTheLongestSequence) {
  for (const auto& [span, buckets, max_rel] : {std::tuple{256, 256, 512}, std::tuple{16, 16, 64}, std::tuple{12, -1, 12}}) {
    const std::size_t max_len = 600;
    const std::vector<float> rel = ops::deberta_rel_index_table(max_len, span, buckets, max_rel);
    ops::DisentangledAttentionArgs a;
    a.span = static_cast<std::size_t>(span);
    a.max_len = max_len;
    a.buckets = buckets;
    a.max_rel = max_rel;
    for (std::size_t L : {std::size_t{1}, std::size_t{2}, std::size_t{16}, std::size_t{129}, std::size_t{256},
                          std::size_t{257}, std::size_t{599}, std::size_t{600}, std::size_t{4000}}) {
      const ops::RelWindow win = ops::deberta_rel_window(L, a);
      const int n = static_cast<int>(std::min(L, max_len));
      int lo = 1 << 30, hi = -1;
      for (int d = -(n - 1); d <= n - 1; ++d) {
        const int m = static_cast<int>(rel[static_cast<std::size_t>(d + static_cast<int>(max_len) - 1)]);
        lo = std::min(lo, m);
        hi = std::max(hi, m);
      }
      EXPECT_EQ(win.m_lo, lo) << "span " << span << " L " << L;
      EXPECT_EQ(win.m_lo + win.count - 1, hi) << "span " << span << " L " << L;
    }
  }
}

}  // namespace
}  // namespace il::test
