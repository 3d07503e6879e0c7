#include "models/embedding_head.h"

#include "core/env.h"
#include "core/error.h"

namespace il::models {

std::string pooling_program(PoolingMode mode) { return "pool_" + std::string(pooling_name(mode)); }

namespace {

bool first_token_programs_allowed() {
  static const bool allowed = env::on_unless_zero("IL_FIRST_TOKEN");
  return allowed;
}

}  // namespace

std::string selected_suffix(plan::QueryRows which) {
  switch (which) {
    case plan::QueryRows::kFirst: return "first";
    case plan::QueryRows::kLast: return "last";
    case plan::QueryRows::kAll: break;
  }
  throw make_error("selected rows: every row is not a selection");
}

Programs embedding_programs(const plan::Plan& plan, PoolingMode mode) {
  if (first_token_programs_allowed() && mode != PoolingMode::kMean) {
    const std::string suffix =
        selected_suffix(mode == PoolingMode::kCls ? plan::QueryRows::kFirst : plan::QueryRows::kLast);
    if (plan.has_program("encode_" + suffix) && plan.has_program("pool_selected_" + suffix))
      return {"encode_" + suffix, "pool_selected_" + suffix};
  }
  return {"encode", pooling_program(mode)};
}

Programs scoring_programs(const plan::Plan& plan) {
  if (first_token_programs_allowed())
    for (const char* suffix : {"first", "last"})
      if (plan.has_program(std::string("encode_") + suffix) && plan.has_program(std::string("ce_head_") + suffix))
        return {std::string("encode_") + suffix, std::string("ce_head_") + suffix};
  return {"encode", "ce_head"};
}

std::size_t build_embedding_head(plan::Plan& plan, plan::BufferId hidden, plan::BufferId selected,
                                 plan::QueryRows which, std::size_t hidden_size,
                                 const std::optional<DenseWeights>& dense) {
  using plan::Rows;
  const plan::BufferId pooled = plan.add_buffer("pooled", Rows::kSequences, hidden_size);
  plan::View embedding = plan.whole(pooled);

  plan::GemmStep proj;
  if (dense) {
    const auto& m = dense->module;
    check(static_cast<std::size_t>(m.in_features) == hidden_size, "Dense module in ",
          m.dir.string(), ": in_features ", m.in_features, " does not match the hidden size ",
          hidden_size);
    const int64_t out = m.out_features, in = m.in_features;
    const plan::BufferId projected =
        plan.add_buffer("dense_out", Rows::kSequences, static_cast<std::size_t>(out));
    proj.x = plan.whole(pooled);
    proj.w = plan.add_weight("dense.linear.weight", {out, in}, dense->src->load("linear.weight", {out, in}));
    if (m.bias) proj.bias = plan.add_weight("dense.linear.bias", {out}, dense->src->load("linear.bias", {out}));
    proj.act = m.act;
    proj.y = plan.whole(projected);
    embedding = plan.whole(projected);
  }

  for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken}) {
    const std::string program = pooling_program(mode);
    plan.add_step(program, "pool", plan::PoolStep{plan.whole(hidden), mode, plan.whole(pooled)});
    if (dense) plan.add_step(program, "dense", proj);
  }
  if (selected >= 0) {
    const std::string program = "pool_selected_" + selected_suffix(which);
    const PoolingMode mode = which == plan::QueryRows::kFirst ? PoolingMode::kCls : PoolingMode::kLastToken;
    plan.add_step(program, "pool", plan::PoolStep{plan.whole(selected), mode, plan.whole(pooled)});
    if (dense) plan.add_step(program, "dense", proj);
  }
  plan.add_step("normalize", "l2", plan::L2Step{embedding});
  plan.set_output("embedding", embedding);
  return embedding.cols;
}

}  // namespace il::models
