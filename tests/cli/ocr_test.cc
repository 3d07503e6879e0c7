// `inferencelayer ocr` end to end on the CPU: the tiny random GLM-OCR (tests/fixtures/glm-ocr)
// in a folder completed with a tokenizer, an image processor and page PNGs of our own
// (tests/fixtures/glm-ocr-pipeline, from tools/oracle/make_glm_ocr_pipeline_fixtures.py), against
// what transformers' Glm46VProcessor + generate made of the same page bytes: the new tokens and
// their text. PDFs (drawn here, rendered by pdftoppm) give what their rendered pages give.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

namespace fs = std::filesystem;

nlohmann::json expected() {
  std::ifstream in(fixture_dir("glm-ocr-pipeline") / "expected.json");
  return nlohmann::json::parse(in);
}

// The model folder: the weights' fixture (model.safetensors is a link to ../glm-ocr's) with a
// tokenizer, an image processor and a chat template.
fs::path make_model(const ScratchDir&) { return fixture_dir("glm-ocr-pipeline"); }

std::string page(const std::string& name) { return (fixture_dir("glm-ocr-pipeline") / name).string(); }

std::vector<std::string> ocr_args(const fs::path& model, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"ocr", "-m", model.string(), "--device", "cpu", "--kv-page-size", "4"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Every case of one task, all pages in one call (decoded together), as JSON lines.
void check_task(const std::string& task, const std::string& key, const std::vector<std::string>& guard) {
  ScratchDir dir;
  const fs::path model = make_model(dir);
  const nlohmann::json e = expected();
  std::vector<std::string> args = ocr_args(model, {"--format", "json", "--task", task, "--max-new-tokens",
                                                   std::to_string(e.at("meta").at("new_tokens").get<int>())});
  args.insert(args.end(), guard.begin(), guard.end());
  std::vector<nlohmann::json> cases;
  for (const auto& c : e.at("cases"))
    if (c.at("task") == task) {
      cases.push_back(c);
      args.push_back(page(c.at("page")));
    }
  ASSERT_FALSE(cases.empty());
  const RunResult r = run_cli_bounded(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), cases.size()) << r.out;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json got = parse_line(lines[i]);
    const nlohmann::json& want = cases[i];
    EXPECT_EQ(got.at("tokens"), want.at(key)) << want.at("page") << " " << task;
    EXPECT_EQ(got.at("text"), want.at(key + "_text")) << want.at("page") << " " << task;
    EXPECT_EQ(got.at("image_grid_thw"), want.at("image_grid_thw"));
    EXPECT_EQ(got.at("prompt_tokens"), want.at("input_ids").size()) << "the prompt the processor built";
    EXPECT_EQ(got.at("source"), page(want.at("page")));
    EXPECT_EQ(got.at("page"), 1);
    for (const char* k : {"prepare", "prefill", "decode", "total"}) EXPECT_TRUE(got.at("timings_ms").contains(k));
  }
}

TEST(OcrCli, TextTaskMatchesTransformersWithoutTheGuard) { check_task("text", "greedy", {"--no-repeat-ngram", "0"}); }

TEST(OcrCli, TableAndFormulaTasks) {
  check_task("table", "greedy", {"--no-repeat-ngram", "0"});
  check_task("formula", "greedy", {"--no-repeat-ngram", "0"});
}

// The guard's n-gram rule over the whole sequence (window 0) is transformers' no_repeat_ngram_size.
TEST(OcrCli, NgramGuardMatchesTransformers) {
  check_task("text", "greedy_no_repeat_ngram_3", {"--no-repeat-ngram", "3", "--ngram-window", "0"});
}

TEST(OcrCli, MarkdownIsThePagesTextInOrder) {
  ScratchDir dir;
  const fs::path model = make_model(dir);
  const nlohmann::json e = expected();
  const std::string n = std::to_string(e.at("meta").at("new_tokens").get<int>());
  const RunResult one = run_cli_bounded(
      ocr_args(model, {"--no-repeat-ngram", "0", "--max-new-tokens", n, page("page1.png")}), dir);
  ASSERT_EQ(one.status, 0) << one.err;
  std::string want1 = e.at("cases")[0].at("greedy_text");
  want1.erase(want1.find_last_not_of(" \t\r\n") + 1);
  EXPECT_EQ(one.out, want1 + "\n");
  // Two pages: each introduced by a comment naming it, in the order given.
  const RunResult two = run_cli_bounded(ocr_args(model, {"--no-repeat-ngram", "0", "--max-new-tokens", n,
                                                         page("page2.png"), page("page1.png")}),
                                        dir);
  ASSERT_EQ(two.status, 0) << two.err;
  const std::size_t first = two.out.find("<!-- page 1: " + page("page2.png") + " -->");
  const std::size_t second = two.out.find("<!-- page 2: " + page("page1.png") + " -->");
  EXPECT_NE(first, std::string::npos) << two.out;
  EXPECT_NE(second, std::string::npos) << two.out;
  EXPECT_LT(first, second);
  EXPECT_NE(two.out.find(want1, second), std::string::npos) << two.out;
}

// The pages through a small window: one page in flight at a time, one preparing thread, a KV
// cache that holds one page: the same tokens as all together.
TEST(OcrCli, PagesInFlightDoNotChangeTheOutput) {
  ScratchDir dir;
  const fs::path model = make_model(dir);
  const nlohmann::json e = expected();
  const std::string n = std::to_string(e.at("meta").at("new_tokens").get<int>());
  const std::vector<std::string> pages = {page("page1.png"), page("page2.png"), page("page1.png")};
  std::vector<std::string> wide = ocr_args(model, {"--format", "json", "--no-repeat-ngram", "0", "--max-new-tokens", n});
  std::vector<std::string> narrow = ocr_args(model, {"--format", "json", "--no-repeat-ngram", "0", "--max-new-tokens",
                                                     n, "--max-pages-in-flight", "1", "--prepare-threads", "1"});
  wide.insert(wide.end(), pages.begin(), pages.end());
  narrow.insert(narrow.end(), pages.begin(), pages.end());
  const RunResult a = run_cli_bounded(wide, dir), b = run_cli_bounded(narrow, dir);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(a.lines().size(), 3u);
  ASSERT_EQ(b.lines().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(parse_line(a.lines()[i]).at("tokens"), parse_line(b.lines()[i]).at("tokens")) << "page " << i + 1;
  EXPECT_EQ(parse_line(a.lines()[0]).at("tokens"), parse_line(a.lines()[2]).at("tokens"));
}

TEST(OcrCli, BadPagesAndOptionsAreRefused) {
  ScratchDir dir;
  const fs::path model = make_model(dir);
  const std::string junk = dir.write("junk.png", {"not an image"});
  RunResult r = run_cli_bounded(ocr_args(model, {page("page1.png"), junk}), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("junk.png"), std::string::npos) << r.err;
  r = run_cli_bounded(ocr_args(model, {dir.file("missing.png")}), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("missing.png"), std::string::npos) << r.err;
  r = run_cli_bounded(ocr_args(model, {"--task", "poem", page("page1.png")}), dir);
  EXPECT_EQ(r.status, 2) << r.err;
  r = run_cli_bounded(ocr_args(model, {"--pages", "3-1", page("page1.png")}), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("backwards"), std::string::npos) << r.err;
  // A model that does not read pages.
  r = run_cli_bounded({"ocr", "-m", fixture_path("bert-mean"), page("page1.png")}, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not an OCR model"), std::string::npos) << r.err;
}

bool have_poppler() { return std::system("pdftoppm -v >/dev/null 2>&1 && pdfinfo -v >/dev/null 2>&1") == 0; }

TEST(OcrCli, PdfPagesReadAsTheirRenderedImages) {
  if (!have_poppler()) GTEST_SKIP() << "pdftoppm / pdfinfo not installed (apt-get install poppler-utils)";
  ScratchDir dir;
  const fs::path model = make_model(dir);
  const std::string pdf = dir.file("doc.pdf");
  std::ofstream(pdf, std::ios::binary) << tiny_pdf({"Hello", "page two", "three"});
  // The same pages rendered by hand at the same resolution.
  for (int p = 2; p <= 3; ++p) {
    const std::string cmd = "pdftoppm -r 150 -f " + std::to_string(p) + " -l " + std::to_string(p) + " -png " + pdf +
                            " > " + dir.file("p" + std::to_string(p) + ".png");
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  const std::vector<std::string> common = {"--format", "json", "--max-new-tokens", "8", "--dpi", "150"};
  std::vector<std::string> from_pdf = ocr_args(model, common);
  from_pdf.insert(from_pdf.end(), {"--pages", "2-", pdf});
  std::vector<std::string> from_png = ocr_args(model, common);
  from_png.insert(from_png.end(), {dir.file("p2.png"), dir.file("p3.png")});
  const RunResult a = run_cli_bounded(from_pdf, dir), b = run_cli_bounded(from_png, dir);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(a.lines().size(), 2u) << a.out;
  for (std::size_t i = 0; i < 2; ++i) {
    const nlohmann::json x = parse_line(a.lines()[i]), y = parse_line(b.lines()[i]);
    EXPECT_EQ(x.at("source"), pdf);
    EXPECT_EQ(x.at("page"), i + 2);
    EXPECT_EQ(x.at("tokens"), y.at("tokens"));
    EXPECT_EQ(x.at("image_grid_thw"), y.at("image_grid_thw"));
  }
  // A file that says it is a PDF and is not: pdfinfo's refusal, naming the file.
  const std::string bad = dir.write("bad.pdf", {"%PDF-1.4 but nothing else"});
  const RunResult c = run_cli_bounded(ocr_args(model, {bad}), dir);
  EXPECT_EQ(c.status, 2);
  EXPECT_NE(c.err.find("bad.pdf"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace il::cli_test
