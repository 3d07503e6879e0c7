#include "cli_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

namespace il::cli_test {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<std::string> RunResult::lines() const {
  std::vector<std::string> v;
  std::size_t pos = 0;
  while (pos < out.size()) {
    const std::size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) {
      v.push_back(out.substr(pos));
      break;
    }
    v.push_back(out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return v;
}

std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string cli_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += ' ' + quote(a);
  return s;
}

RunResult run_cli(const std::string& args, const std::string& stdin_file, const std::string& pipe_from) {
  ScratchDir tmp;
  const std::string out = tmp.file("stdout"), err = tmp.file("stderr");
  std::string cmd = pipe_from + " " + quote(IL_CLI_PATH) + args;
  if (!stdin_file.empty()) cmd += " < " + quote(stdin_file);
  else if (pipe_from.empty()) cmd += " < /dev/null";
  cmd += " > " + quote(out) + " 2> " + quote(err);
  const int raw = std::system(cmd.c_str());
  RunResult r;
  r.status = (raw != -1 && WIFEXITED(raw)) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

ScratchDir::ScratchDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("il_cli_test_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const std::vector<std::string>& lines) const {
  const std::string p = file(name);
  std::ofstream f(p, std::ios::binary);
  for (const auto& l : lines) f << l << '\n';
  return p;
}

RunResult run_cli_bounded(const std::vector<std::string>& args, const ScratchDir& dir,
                          const std::vector<std::string>& lines) {
  static int inputs = 0;
  const std::string in = lines.empty() ? "/dev/null" : dir.write("input-" + std::to_string(inputs++) + ".jsonl", lines);
  return run_cli(cli_args(args), in, "timeout 30");
}

void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(text.find(p), std::string::npos) << "missing '" << p << "' in: " << text;
}

std::filesystem::path copy_fixture(const std::string& name, const ScratchDir& dir) {
  static int copies = 0;
  const std::filesystem::path dst = dir.path() / ("model-" + std::to_string(copies++));
  std::filesystem::copy(fixture_dir(name), dst, std::filesystem::copy_options::recursive);
  return dst;
}

void edit_json_file(const std::filesystem::path& path, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j;
  {
    std::ifstream in(path);
    j = nlohmann::json::parse(in);
  }
  edit(j);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(2);
}

std::filesystem::path fixture_dir(const std::string& name) {
  const char* env = std::getenv("IL_FIXTURES");
  const std::filesystem::path dir = std::filesystem::path(env && *env ? env : IL_DEFAULT_FIXTURES) / name;
  EXPECT_TRUE(std::filesystem::is_directory(dir)) << "fixture folder " << dir << " is missing";
  return dir;
}

std::string fixture_path(const std::string& name) { return fixture_dir(name).string(); }

nlohmann::json load_expected(const std::string& name) {
  const auto p = fixture_dir(name) / "expected.json";
  std::ifstream in(p);
  if (!in) {
    ADD_FAILURE() << p << " is missing";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

nlohmann::json parse_line(const std::string& line) {
  try {
    return nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "output line is not JSON (" << e.what() << "): " << line.substr(0, 200);
    return nullptr;
  }
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// A minimal PDF of our own: pages of a given size with a filled rectangle and a line of text.
std::string tiny_pdf(const std::vector<std::string>& texts) {
  std::vector<std::string> objs;
  const std::size_t n = texts.size();
  std::string kids;
  for (std::size_t i = 0; i < n; ++i) kids += std::to_string(3 + 2 * i) + " 0 R ";
  objs.push_back("<< /Type /Catalog /Pages 2 0 R >>");
  objs.push_back("<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(n) + " >>");
  for (std::size_t i = 0; i < n; ++i) {
    const std::string stream = "BT /F1 9 Tf 4 30 Td (" + texts[i] + ") Tj ET 0 0 1 rg 4 4 20 10 re f";
    objs.push_back("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " + std::to_string(60 + 10 * i) + " 44] /Contents " +
                   std::to_string(4 + 2 * i) + " 0 R /Resources << /Font << /F1 " + std::to_string(3 + 2 * n) +
                   " 0 R >> >> >>");
    objs.push_back("<< /Length " + std::to_string(stream.size()) + " >>\nstream\n" + stream + "\nendstream");
  }
  objs.push_back("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  return pdf_from_objects(objs);
}

std::string pdf_from_objects(const std::vector<std::string>& objects) {
  std::string out = "%PDF-1.4\n";
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(out.size());
    out += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
  }
  const std::size_t xref = out.size();
  out += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (std::size_t o : offsets) {
    char line[32];
    std::snprintf(line, sizeof line, "%010zu 00000 n \n", o);
    out += line;
  }
  out += "trailer\n<< /Size " + std::to_string(objects.size() + 1) + " /Root 1 0 R >>\nstartxref\n" +
         std::to_string(xref) + "\n%%EOF\n";
  return out;
}

}  // namespace il::cli_test
