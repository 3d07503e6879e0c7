// The sentence-transformers module files: an input is up to five files separated by lines
// "@@" (the seeds show the layout), written into a model folder and read the way the engine reads
// them (io::load_sentence_transformer_info). A file whose whole text is "!absent" is not written,
// nor are files past the last section. Accepted or refused with il::Error; anything else is a
// finding.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "fuzz_files.h"
#include "io/st_modules.h"

namespace {

// In the order of the sections. modules.json names the module folders; the seeds use these.
constexpr std::array<const char*, 5> kFiles = {
    "modules.json", "1_Pooling/config.json", "2_Dense/config.json",
    "config_sentence_transformers.json", "sentence_bert_config.json"};
constexpr std::string_view kSeparator = "\n@@\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  bool more = true;  // false past the last section
  for (const char* file : kFiles) {
    std::string_view section;
    std::size_t cut = std::string_view::npos;
    if (more) {
      cut = rest.find(kSeparator);
      section = rest.substr(0, cut);
    }
    if (!more || section == "!absent") {
      il::fuzz::remove_file(file);
    } else {
      il::fuzz::write_file(file, section);
    }
    if (more && cut == std::string_view::npos) more = false;
    if (more) rest = rest.substr(cut + kSeparator.size());
  }
  try {
    (void)il::io::load_sentence_transformer_info(il::fuzz::scratch_dir());
  } catch (const il::Error&) {
  }
  return 0;
}
