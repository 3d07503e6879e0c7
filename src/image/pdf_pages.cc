#include "image/pdf_pages.h"

#include <chrono>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/subprocess.h"

namespace il::image {
namespace {

constexpr const char* kPopplerHint = "PDF input needs poppler's pdfinfo and pdftoppm: apt-get install poppler-utils";

}  // namespace

bool looks_like_pdf(const std::uint8_t* bytes, std::size_t size) {
  return size >= 5 && std::memcmp(bytes, "%PDF-", 5) == 0;
}

std::size_t pdf_page_count(const std::string& path) {
  const SubprocessResult r = run_subprocess({"pdfinfo", "--", path}, {1u << 20, std::chrono::seconds(60)},
                                            kPopplerHint);
  check(r.exit_code == 0, path, ": pdfinfo cannot read this PDF (exit ", r.exit_code, "): ", r.err);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Pages:", 0) != 0) continue;
    const std::size_t digits = line.find_first_not_of(' ', 6);
    if (digits == std::string::npos) break;
    try {
      const long long pages = std::stoll(line.substr(digits));
      check(pages >= 0, path, ": pdfinfo gives a negative page count");
      return static_cast<std::size_t>(pages);
    } catch (const std::logic_error&) {
      break;
    }
  }
  throw make_error(path, ": pdfinfo gives no page count");
}

std::vector<std::uint8_t> render_pdf_page(const std::string& path, std::size_t page, int dpi, std::size_t max_bytes) {
  const std::string n = std::to_string(page);
  const SubprocessResult r =
      run_subprocess({"pdftoppm", "-r", std::to_string(dpi), "-f", n, "-l", n, "-png", "--", path},
                     {max_bytes, std::chrono::seconds(120)}, kPopplerHint);
  check(r.exit_code == 0 && !r.out.empty(), path, " page ", page, ": pdftoppm cannot render it (exit ", r.exit_code,
        "): ", r.err);
  return std::vector<std::uint8_t>(r.out.begin(), r.out.end());
}

}  // namespace il::image
