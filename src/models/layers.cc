#include "models/layers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "plan/operands.h"
#include "plan/overloaded.h"

namespace il::models {

using plan::BufferId;
using plan::Rows;
using plan::View;

plan::WeightId Layers::tensor(const std::string& name, std::vector<int64_t> shape) {
  plan::StoredTensor stored = src_.view(name, shape);
  return plan_.add_weight(name, std::move(shape), std::move(stored));
}

plan::WeightId Layers::stacked(const std::string& fused, const std::vector<std::string>& names,
                               const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t> shape) {
  plan::StoredTensor all;
  for (std::size_t i = 0; i < names.size(); ++i) {
    plan::StoredTensor part = src_.view(names[i], shapes[i]);
    all.parts.insert(all.parts.end(), part.parts.begin(), part.parts.end());
    all.keep.insert(all.keep.end(), part.keep.begin(), part.keep.end());
  }
  return plan_.add_weight(fused, std::move(shape), std::move(all));
}

plan::WeightId Layers::optional_tensor(const std::string& name, std::vector<int64_t> shape) {
  if (!src_.has(name)) return plan::kNoWeight;
  return tensor(name, std::move(shape));
}

plan::GemmStep Layers::linear(const std::string& name, int64_t out, int64_t in, View x, View y, Bias bias,
                              Activation act) {
  return fused_linear(name, {{name, out}}, in, x, y, bias, act);
}

plan::GemmStep Layers::fused_linear(const std::string& fused, const std::vector<LinearPart>& parts, int64_t in,
                                    View x, View y, Bias bias, Activation act) {
  check(!parts.empty(), "fused linear ", fused, ": no parts");
  plan::GemmStep g;
  g.x = x;
  g.y = y;
  g.act = act;
  int64_t rows = 0;
  for (const LinearPart& p : parts) rows += p.rows;
  check(static_cast<std::size_t>(in) == x.cols && static_cast<std::size_t>(rows) == y.cols, "linear ", fused,
        ": views of ", x.cols, " → ", y.cols, " columns for a weight [", rows, ", ", in, "]");
  // Stacked without a copy: the parts stay in the checkpoint, joined as the executor places them.
  std::vector<std::string> weights, biases;
  std::vector<std::vector<int64_t>> weight_shapes, bias_shapes;
  for (const LinearPart& p : parts) {
    weights.push_back(p.name + ".weight");
    weight_shapes.push_back({p.rows, in});
    biases.push_back(p.name + ".bias");
    bias_shapes.push_back({p.rows});
  }
  const std::string w_name = parts.size() == 1 ? weights[0] : fused + ".weight";
  g.w = stacked(w_name, weights, weight_shapes, {rows, in});
  bool with_bias = bias == Bias::kRequired;
  if (bias == Bias::kIfPresent) {
    std::size_t present = 0;
    for (const LinearPart& p : parts) present += src_.has(p.name + ".bias") ? 1 : 0;
    check(present == 0 || present == parts.size(), "linear ", fused, ": some of its parts have a bias, others not");
    with_bias = present > 0;
  }
  if (with_bias) g.bias = stacked(parts.size() == 1 ? biases[0] : fused + ".bias", biases, bias_shapes, {rows});
  return g;
}

plan::LayerNormStep Layers::norm(const std::string& name, const NormSpec& spec, int64_t cols, View x, View residual,
                                 View out, View sum_out, std::size_t group) {
  plan::LayerNormStep n;
  n.x = x;
  n.residual = residual;
  n.out = out;
  n.sum_out = sum_out;
  n.group = group;
  n.eps = spec.eps;
  n.rms = spec.rms;
  n.w = tensor(name + ".weight", {cols});
  if (!spec.rms && spec.bias == Bias::kRequired) n.b = tensor(name + ".bias", {cols});
  if (!spec.rms && spec.bias == Bias::kIfPresent) n.b = optional_tensor(name + ".bias", {cols});
  return n;
}

void attention_block(Layers& l, const std::string& prefix, const AttentionNames& names, const AttentionShape& s,
                     View x, View qkv, View ctx, View out) {
  plan::Plan& plan = l.plan();
  const int64_t hd = static_cast<int64_t>(s.head_dim);
  const int64_t q_rows = static_cast<int64_t>(s.heads) * hd, kv_rows = static_cast<int64_t>(s.kv_heads) * hd;
  const std::size_t qw = static_cast<std::size_t>(q_rows), kvw = static_cast<std::size_t>(kv_rows);
  check(qkv.cols == qw + 2 * kvw, "attention ", prefix, ": the QKV view has ", qkv.cols, " columns, not ",
        qw + 2 * kvw);
  const View q{qkv.buffer, qkv.col, qw}, k{qkv.buffer, qkv.col + qw, kvw}, v{qkv.buffer, qkv.col + qw + kvw, kvw};

  l.add(prefix + "qkv",
        l.fused_linear(prefix + "qkv", {{names.q, q_rows}, {names.k, kv_rows}, {names.v, kv_rows}}, s.hidden, x, qkv,
                       s.qkv_bias));
  // q and k lie side by side in the QKV buffer with one head width, so one rope step turns both;
  // RMS q / k norms (Qwen3, LFM2) run inside it, head by head, before the rotation: one launch
  // where there were four (under a microsecond each at Qwen3 1×16 on the H200, perf-history.md).
  const bool fused_norms = s.rope_theta && !names.q_norm.empty() && !names.k_norm.empty() && s.qk_norm.rms;
  if (!fused_norms && !names.q_norm.empty())
    l.add(prefix + "q_norm", l.norm(names.q_norm, s.qk_norm, hd, q, {}, q, {}, s.head_dim));
  if (!fused_norms && !names.k_norm.empty())
    l.add(prefix + "k_norm", l.norm(names.k_norm, s.qk_norm, hd, k, {}, k, {}, s.head_dim));
  if (s.rope_theta) {
    plan::RopeStep rope{View{qkv.buffer, qkv.col, qw + kvw}, s.heads + s.kv_heads, s.head_dim, s.head_dim,
                        *s.rope_theta};
    if (fused_norms) {
      rope.norm_first = l.tensor(names.q_norm + ".weight", {hd});
      rope.norm_rest = l.tensor(names.k_norm + ".weight", {hd});
      rope.norm_split = s.heads;
      rope.norm_eps = s.qk_norm.eps;
    }
    l.add(prefix + (fused_norms ? "qk_norm_rope" : "qk_rope"), rope);
  }
  plan::AttentionStep a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.head_dim = s.head_dim;
  a.scale = s.scale > 0.0f ? s.scale : 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  a.mask = s.mask;
  a.window = s.window;
  a.out = ctx;
  l.add(prefix + "attention", a);
  l.add(prefix + "o", l.linear(names.o, s.hidden, q_rows, ctx, out, s.o_bias));
  (void)plan;
}

void glu_mlp(Layers& l, const std::string& prefix, const GluMlpNames& names, int64_t hidden, int64_t intermediate,
             Activation act, Bias bias, View x, View gate_up, View inner, View out) {
  l.add(prefix + "gate_up", l.fused_linear(prefix + "gate_up", {{names.gate, intermediate}, {names.up, intermediate}},
                                           hidden, x, gate_up, bias));
  l.add(prefix + "glu", plan::GluStep{gate_up, act, inner});
  l.add(prefix + "down", l.linear(names.down, hidden, intermediate, inner, out, bias));
}

namespace {

bool is_tokens(const plan::Plan& plan, BufferId b) {
  return b >= 0 && plan.buffers().at(static_cast<std::size_t>(b)).rows == Rows::kTokens;
}

BufferId storage_of(const plan::Plan& plan, BufferId b) {
  const BufferId s = plan.buffers().at(static_cast<std::size_t>(b)).storage;
  return s >= 0 ? s : b;
}

// Every view of a step, for remapping in place.
template <typename F>
void for_each_view(plan::StepOp& op, F&& f) {
  std::visit(plan::Overloaded{
                 [&](plan::EmbedStep& s) { f(s.out); },
                 [&](plan::GemmStep& s) { f(s.x), f(s.y); },
                 [&](plan::LayerNormStep& s) { f(s.x), f(s.residual), f(s.out), f(s.sum_out); },
                 [&](plan::GluStep& s) { f(s.x), f(s.out); },
                 [&](plan::RopeStep& s) { f(s.x); },
                 [&](plan::AttentionStep& s) { f(s.q), f(s.k), f(s.v), f(s.out); },
                 [&](plan::PoolStep& s) { f(s.x), f(s.out); },
                 [&](plan::L2Step& s) { f(s.x); },
                 [&](plan::DisentangledAttentionStep& s) { f(s.q), f(s.k), f(s.v), f(s.out); },
                 [&](plan::ShortConvStep& s) { f(s.x), f(s.out); },
                 [&](plan::PatchEmbedStep& s) { f(s.patches), f(s.out); },
                 [&](plan::ProbeAttentionStep& s) { f(s.k), f(s.v), f(s.out); },
                 [&](plan::KvWriteStep& s) { f(s.k), f(s.v), f(s.k_cache), f(s.v_cache); },
                 [&](plan::CachedAttentionStep& s) { f(s.q), f(s.k_cache), f(s.v_cache), f(s.out); },
                 [&](plan::InjectRowsStep& s) { f(s.src), f(s.out); },
                 [&](plan::RouterStep& s) { f(s.x), f(s.ids), f(s.weights); },
                 [&](plan::MoeStep& s) { f(s.x), f(s.ids), f(s.weights), f(s.out); },
                 [&](plan::SoftmaxStep& s) { f(s.x), f(s.out); },
                 [&](plan::SoftcapStep& s) { f(s.x), f(s.out); },
                 [&](plan::SamAttentionStep& s) { f(s.qkv), f(s.out); },
                 [&](plan::GatherRowsStep& s) { f(s.src), f(s.out); },
                 [&](plan::SequenceWindowStep& s) { f(s.x), f(s.out); },
             },
             op);
}

}  // namespace

void add_prefill_program(plan::Plan& plan, const std::string& from, const std::string& to, plan::View k, plan::View v,
                         plan::BufferId image_rows, plan::View embedded) {
  const std::vector<plan::Step> steps = plan.program(from);
  for (const plan::Step& step : steps) {
    if (const auto* ca = std::get_if<plan::CachedAttentionStep>(&step.op)) {
      check(ca->window == 0, "prefill ", step.name, ": a sliding-window cached attention has no prefill form here");
      plan::AttentionStep a;
      a.q = ca->q;
      a.k = k;
      a.v = v;
      a.heads = ca->heads;
      a.kv_heads = ca->kv_heads;
      a.head_dim = ca->head_dim;
      a.scale = ca->scale;
      a.mask = ops::MaskMode::kCausal;
      a.out = ca->out;
      plan.add_step(to, step.name, a);
    } else {
      plan.add_step(to, step.name, step.op);
    }
    if (step.name == "embeddings" && image_rows >= 0)
      plan.add_step(to, "image_rows", plan::InjectRowsStep{plan.whole(image_rows), embedded});
  }
}

std::vector<BufferId> add_selected_program(plan::Plan& plan, const std::string& from, const std::string& to,
                                           plan::QueryRows which) {
  check(which != plan::QueryRows::kAll, "selected program ", to, ": choose the first or the last row");
  const std::vector<plan::Step> steps = plan.program(from);  // a copy: `to` is added to the same map
  std::size_t a = steps.size();
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (std::holds_alternative<plan::AttentionStep>(steps[i].op)) a = i;
  check(a < steps.size(), "selected program ", to, ": program ", from, " has no attention step");
  const auto& attention = std::get<plan::AttentionStep>(steps[a].op);
  check(attention.queries == plan::QueryRows::kAll, "selected program ", to, ": ", steps[a].name,
        " already computes selected rows");

  // Tail timeline: 0 = the gathers, 1 = the attention, 1 + i = the i-th step after it. For each
  // token buffer touched in the tail: when its selected counterpart is first written and last
  // read (an output stays live to the end), and which token storage is still read in the tail.
  constexpr std::size_t kEnd = std::numeric_limits<std::size_t>::max();
  const std::size_t n_buffers = plan.buffers().size();
  std::vector<std::size_t> first_write(n_buffers, kEnd), last_read(n_buffers, 0);
  std::vector<bool> gathered(n_buffers, false), touched(n_buffers, false);
  std::vector<std::size_t> token_use_until(n_buffers, 0);  // storage id → last tail position it is read as tokens
  std::vector<bool> token_used(n_buffers, false);
  for (std::size_t i = a; i < steps.size(); ++i) {
    const std::size_t pos = 1 + (i - a);
    const plan::Operands o = plan::operands(steps[i].op);
    check(!std::holds_alternative<plan::RopeStep>(steps[i].op) && !std::holds_alternative<plan::EmbedStep>(steps[i].op) &&
              !std::holds_alternative<plan::ShortConvStep>(steps[i].op) &&
              !std::holds_alternative<plan::SequenceWindowStep>(steps[i].op),
          "selected program ", to, ": step ", steps[i].name, " after the last attention needs every token");
    if (i == a) {  // the attention reads every token's q, k and v
      for (const View& r : o.reads) {
        const BufferId s = storage_of(plan, r.buffer);
        token_used[static_cast<std::size_t>(s)] = true;
        token_use_until[static_cast<std::size_t>(s)] = pos;
      }
    } else {
      for (const View& r : o.reads) {
        if (!is_tokens(plan, r.buffer)) continue;
        const auto b = static_cast<std::size_t>(r.buffer);
        touched[b] = true;
        if (first_write[b] == kEnd) {  // read before the tail writes it: gathered from the token rows
          gathered[b] = true;
          first_write[b] = 0;
          const auto s = static_cast<std::size_t>(storage_of(plan, r.buffer));
          token_used[s] = true;
        }
        last_read[b] = std::max(last_read[b], pos);
      }
    }
    for (const View& w : o.writes) {
      if (!is_tokens(plan, w.buffer)) continue;
      const auto b = static_cast<std::size_t>(w.buffer);
      touched[b] = true;
      first_write[b] = std::min(first_write[b], pos);
    }
  }
  // Outputs (views a head reads after the program) live to the end.
  if (plan.has_output("hidden")) {
    const auto b = static_cast<std::size_t>(plan.output("hidden").buffer);
    if (touched[b] && first_write[b] != kEnd) last_read[b] = kEnd;
  }

  // Storage: a token buffer owning its storage hosts selected buffers whose live spans do not
  // overlap one another nor its own remaining token reads (gathers read at 0, the attention at 1).
  struct Span {
    std::size_t lo, hi;
  };
  std::vector<std::vector<Span>> hosted(n_buffers);
  for (std::size_t s = 0; s < n_buffers; ++s)
    if (token_used[s]) hosted[s].push_back({0, token_use_until[s]});
  std::vector<BufferId> selected(n_buffers, -1);
  const auto overlaps = [](const Span& x, const Span& y) { return x.lo <= y.hi && y.lo <= x.hi; };
  for (std::size_t b = 0; b < n_buffers; ++b) {
    if (!touched[b] || first_write[b] == kEnd) continue;
    const plan::BufferDesc desc = plan.buffers()[b];
    const Span span{first_write[b], std::max(last_read[b], first_write[b])};
    BufferId host = -1;
    for (std::size_t s = 0; s < n_buffers && host < 0; ++s) {
      const plan::BufferDesc& h = plan.buffers()[s];
      if (h.rows != Rows::kTokens || h.storage >= 0 || h.elem != plan::Elem::kActivation || h.cols < desc.cols)
        continue;
      if (std::none_of(hosted[s].begin(), hosted[s].end(), [&](const Span& x) { return overlaps(x, span); }))
        host = static_cast<BufferId>(s);
    }
    const std::string name = "selected." + desc.name;
    if (host >= 0) {
      hosted[static_cast<std::size_t>(host)].push_back(span);
      selected[b] = plan.add_buffer_over(name, Rows::kSelected, desc.cols, host);
    } else {
      selected[b] = plan.add_buffer(name, Rows::kSelected, desc.cols, desc.elem);
    }
  }

  for (std::size_t i = 0; i < a; ++i) plan.add_step(to, steps[i].name, steps[i].op);
  const PoolingMode gather_mode = which == plan::QueryRows::kFirst ? PoolingMode::kCls : PoolingMode::kLastToken;
  for (std::size_t b = 0; b < n_buffers; ++b)
    if (gathered[b])
      plan.add_step(to, "selected.gather." + plan.buffers()[b].name,
                    plan::PoolStep{plan.whole(static_cast<BufferId>(b)), gather_mode, plan.whole(selected[b])});
  const auto remap = [&](View& v) {
    if (is_tokens(plan, v.buffer) && selected[static_cast<std::size_t>(v.buffer)] >= 0)
      v.buffer = selected[static_cast<std::size_t>(v.buffer)];
  };
  for (std::size_t i = a; i < steps.size(); ++i) {
    plan::StepOp op = steps[i].op;
    if (i == a) {
      auto& att = std::get<plan::AttentionStep>(op);
      att.queries = which;
      remap(att.out);
    } else {
      for_each_view(op, remap);
    }
    plan.add_step(to, "selected." + steps[i].name, std::move(op));
  }
  return selected;
}

}  // namespace il::models
