// `inferencelayer rerank`: cross-encoder relevance scores.
//   JSONL form:  --input FILE with {"query", "document"[, "instruction"]} or {"input_ids",
//                "token_type_ids"} lines
//                → {"score": logit} per line ({"scores": [...]} when the head has several labels).
//   Human form:  --query Q DOC... (or --query Q --input docs.txt, one document per line)
//                → a table of the documents, best first.
// On a multi-vector (ColBERT) model the score is late interaction (MaxSim of the query's and the
// document's token vectors, tokenized as PyLate does), computed on the device; JSONL lines that
// share a query (consecutive) are scored in one call.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/chunked.h"
#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "cli/non_finite.h"
#include "cli/progress.h"
#include "cli/text_inputs.h"
#include "cli/token_inputs.h"
#include "core/error.h"

namespace il::cli {
namespace {

struct RerankArgs {
  EngineArgs engine;
  std::string input;
  std::string output = "-";
  std::string query;
  bool query_given = false;
  std::vector<std::string> documents;
  std::string instruction;  // prompt-scored rerankers (Qwen3-Reranker); empty: the model's default
  bool no_truncate = false;
  bool no_progress = false;
};

TokenInput pair_input(const Engine& engine, const std::string& query, const std::string& doc,
                      std::string_view where, bool truncate, const std::string& instruction) {
  // Empty strings are allowed: the pair still has its special tokens, and transformers scores it.
  try {
    TokenizeOptions o;
    o.truncate = truncate;
    o.instruction = instruction;
    return engine.tokenize_pair_with(query, doc, o);
  } catch (const Error& e) {
    throw input_error(where, e.what());  // too long with --no-truncate, invalid UTF-8, an instruction refused
  }
}

TokenInput record_to_input(const InputRecord& r, const Engine& engine, bool truncate, const std::string& instruction) {
  check_fields(r.json, {"query", "document", "instruction", "input_ids", "token_type_ids"}, r.where);
  const bool has_ids = has_key(r.json, "input_ids");
  const bool has_text = has_key(r.json, "query") || has_key(r.json, "document");
  if (has_ids && has_text) throw input_error(r.where, "give either \"query\"/\"document\" or \"input_ids\", not both");
  if (has_ids) return token_input_from_json(r.json, r.where);
  if (!has_text) throw input_error(r.where, "expected \"query\" and \"document\" fields (or \"input_ids\")");
  check_no_types_with_text(r.json, "\"query\" and \"document\"", r.where);
  return pair_input(engine, get_string(r.json, "query", r.where), get_string(r.json, "document", r.where),
                    r.where, truncate,
                    has_key(r.json, "instruction") ? get_string(r.json, "instruction", r.where) : instruction);
}

void write_scores(const Matrix& m, const std::vector<std::string>& where, NonFiniteReport& report, OutputSink& out) {
  for (std::size_t r = 0; r < m.rows; ++r) {
    report.check(m.row(r), m.cols, where[r]);
    std::string& b = out.buffer();
    if (m.cols == 1) {
      b += "{\"score\":";
      append_float(b, m.row(r)[0]);
    } else {
      b += "{\"scores\":";
      append_floats(b, m.row(r), m.cols);
    }
    b += '}';
    out.end_line();
  }
  out.flush();
}

TokenInput role_input(const Engine& engine, const std::string& text, TextRole role, std::string_view where,
                      bool truncate) {
  try {
    TokenizeOptions o;
    o.truncate = truncate;
    o.role = role;
    return engine.tokenize_with(text, o);
  } catch (const Error& e) {
    throw input_error(where, e.what());
  }
}

// MaxSim scores of query / document lines: a run of consecutive lines with one query is one
// engine call (up to kGroup documents), so the query is encoded once per batch of documents.
void run_jsonl_late_interaction(Engine& engine, const RerankArgs& a, const InputChecker& checker) {
  constexpr std::size_t kGroup = 256;
  RecordSource src = RecordSource::from_input(a.input.empty() ? "-" : a.input, InputFormat::kJsonl);
  OutputSink out(a.output);
  Progress progress("rerank", src.total_bytes(), !a.no_progress);
  NonFiniteReport report("null");
  std::string query;
  TokenInput query_input;
  std::vector<TokenInput> docs;
  std::vector<std::string> where;
  const auto flush = [&] {
    if (docs.empty()) return;
    const std::vector<float> scores = engine.late_interaction(query_input, docs);
    Matrix m(scores.size(), 1);
    std::copy(scores.begin(), scores.end(), m.data.begin());
    write_scores(m, where, report, out);
    docs.clear();
    where.clear();
  };
  InputRecord r;
  while (src.next(r)) {
    check_fields(r.json, {"query", "document"}, r.where);
    if (has_key(r.json, "input_ids") || !has_key(r.json, "query") || !has_key(r.json, "document"))
      throw input_error(r.where, "a multi-vector (ColBERT) model scores \"query\" and \"document\" texts");
    std::string q = get_string(r.json, "query", r.where);
    if (docs.empty() || q != query || docs.size() == kGroup) {
      flush();
      query = std::move(q);
      query_input = role_input(engine, query, TextRole::kQuery, r.where, !a.no_truncate);
      checker.check(query_input, r.where);
    }
    TokenInput d = role_input(engine, get_string(r.json, "document", r.where), TextRole::kDocument, r.where,
                              !a.no_truncate);
    checker.check(d, r.where);
    docs.push_back(std::move(d));
    where.push_back(r.where);
    progress.update(src.records_read(), src.bytes_read());
  }
  flush();
  progress.finish();
  report.finish(src.records_read());
}

void run_jsonl(Engine& engine, const RerankArgs& a, const InputChecker& checker) {
  RecordSource src = RecordSource::from_input(a.input.empty() ? "-" : a.input, InputFormat::kJsonl);
  OutputSink out(a.output);
  Progress progress("rerank", src.total_bytes(), !a.no_progress);
  NonFiniteReport report("null");
  run_in_chunks(
      src, a.engine.max_batch_tokens, progress,
      [&](const InputRecord& r) {
        TokenInput in = record_to_input(r, engine, !a.no_truncate, a.instruction);
        checker.check(in, r.where);
        return in;
      },
      [&](const std::vector<TokenInput>& chunk, const std::vector<std::string>& where) {
        write_scores(engine.score(chunk), where, report, out);
      });
  report.finish(src.records_read());
}

std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return s;
}

// The human form holds every document in memory: it has to see all scores to rank them.
void run_ranked(Engine& engine, const RerankArgs& a, const InputChecker& checker) {
  RecordSource src = a.documents.empty() ? RecordSource::from_input(a.input.empty() ? "-" : a.input, InputFormat::kTxt)
                                         : RecordSource::from_texts(a.documents);
  std::vector<std::string> docs;
  std::vector<std::string> where;
  std::vector<TokenInput> inputs;
  const bool late_interaction = engine.info().capabilities.multi_vector && !engine.info().capabilities.score;
  TokenInput query_input;
  if (late_interaction) {
    query_input = role_input(engine, a.query, TextRole::kQuery, "--query", !a.no_truncate);
    checker.check(query_input, "--query");
  }
  InputRecord r;
  while (src.next(r)) {
    TokenInput in = late_interaction ? role_input(engine, r.text, TextRole::kDocument, r.where, !a.no_truncate)
                                     : pair_input(engine, a.query, r.text, r.where, !a.no_truncate, a.instruction);
    checker.check(in, r.where);
    inputs.push_back(std::move(in));
    docs.push_back(std::move(r.text));
    where.push_back(r.where);
  }
  if (inputs.empty()) throw UsageError("no documents to rank");
  Matrix scores;
  if (late_interaction) {
    const std::vector<float> s = engine.late_interaction(query_input, inputs);
    scores = Matrix(s.size(), 1);
    std::copy(s.begin(), s.end(), scores.data.begin());
  } else {
    scores = engine.score(inputs);
  }
  NonFiniteReport report("nan / inf");
  for (std::size_t i = 0; i < scores.rows; ++i) report.check(scores.row(i), scores.cols, where[i]);
  std::vector<std::size_t> order(docs.size());
  std::iota(order.begin(), order.end(), 0);
  // With several labels the first one ranks; all are shown. NaN ranks last: compared as it is,
  // it would break the strict weak order the sort relies on.
  const auto rank_key = [&](std::size_t i) {
    const float s = scores.row(i)[0];
    return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return rank_key(x) > rank_key(y); });

  OutputSink out(a.output);
  std::string& b = out.buffer();
  char cell[64];
  b += "rank  ";
  for (std::size_t c = 0; c < scores.cols; ++c) {
    std::snprintf(cell, sizeof cell, "%10s  ", scores.cols == 1 ? "score" : ("label " + std::to_string(c)).c_str());
    b += cell;
  }
  b += "document";
  out.end_line();
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::snprintf(cell, sizeof cell, "%4zu  ", i + 1);
    b += cell;
    for (std::size_t c = 0; c < scores.cols; ++c) {
      std::snprintf(cell, sizeof cell, "%10.4f  ", static_cast<double>(scores.row(order[i])[c]));
      b += cell;
    }
    b += one_line(docs[order[i]]);
    out.end_line();
  }
  out.flush();
  report.finish(docs.size());
}

void run_rerank(const RerankArgs& a) {
  if (!a.query_given && !a.documents.empty())
    throw UsageError("documents as arguments need --query (or use --input with JSONL lines)");
  if (!a.documents.empty() && !a.input.empty()) throw UsageError("give documents as arguments or --input, not both");
  auto engine = load_engine(a.engine);
  const ModelInfo& info = engine->info();
  if (!info.capabilities.score && !info.capabilities.multi_vector)
    throw UsageError(a.engine.model + " is not a cross-encoder or reranker (it has no scoring head): use "
                     "'inferencelayer embed'");
  const bool late_interaction = !info.capabilities.score;
  if (late_interaction && !a.instruction.empty())
    throw UsageError("--instruction applies to prompt-scored rerankers, not to a multi-vector (ColBERT) model");
  const InputChecker checker(info, static_cast<std::size_t>(info.max_tokens));
  if (a.query_given) run_ranked(*engine, a, checker);
  else if (late_interaction) run_jsonl_late_interaction(*engine, a, checker);
  else run_jsonl(*engine, a, checker);
}

}  // namespace

Command add_rerank_command(CLI::App& app) {
  auto a = std::make_shared<RerankArgs>();
  CLI::App* cmd = app.add_subcommand("rerank", "Score query/document pairs with a cross-encoder");
  cmd->footer(
      "JSONL form: --input FILE ('-' or nothing = stdin), one JSON object per line:\n"
      "  {\"query\": \"...\", \"document\": \"...\"} (and \"instruction\" for Qwen3-Reranker) or\n"
      "  {\"input_ids\": [...], \"token_type_ids\": [...]}\n"
      "  → one line per input, in order: {\"score\": raw_logit}, or {\"scores\": [...]} when the\n"
      "  model has several labels. A bad line stops the run naming its line number (exit status 2);\n"
      "  so does any other field.\n"
      "Human form: --query Q DOC... (or --query Q --input FILE with one document per line)\n"
      "  → a table of the documents, best first (ranked by the first label's logit).\n"
      "Examples:\n"
      "  inferencelayer rerank -m ./ms-marco-MiniLM -i pairs.jsonl\n"
      "  inferencelayer rerank -m ./ms-marco-MiniLM --query \"capital of France\" \"Paris is...\" \"Berlin is...\"\n" +
      std::string(kNonFiniteHelp));
  add_engine_options(*cmd, a->engine);
  cmd->add_option("document", a->documents, "Documents to rank against --query");
  cmd->add_option("-i,--input", a->input, "Input file, '-' for stdin (the default)");
  cmd->add_option("-o,--output", a->output, "Output file, '-' for stdout")->capture_default_str();
  cmd->add_option_function<std::string>(
      "-q,--query", [a](const std::string& q) { a->query = q; a->query_given = true; },
      "Rank documents for this query (human form)");
  cmd->add_option("--instruction", a->instruction,
                  "Task instruction of a prompt-scored reranker (Qwen3-Reranker); a JSONL line's \"instruction\" "
                  "overrides it");
  cmd->add_flag("--no-truncate", a->no_truncate,
                "Refuse pairs longer than the model's maximum (error naming the line) instead of cutting them");
  cmd->add_flag("--no-progress", a->no_progress, "Never draw the progress line on stderr");
  return {cmd, [a] { run_rerank(*a); }};
}

}  // namespace il::cli
