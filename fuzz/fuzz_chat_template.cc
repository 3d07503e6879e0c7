// Chat templates: each input is a template source, compiled and, when it compiles, rendered over a
// fixed conversation (system, user with an image and text, assistant with a tool call, tool) with
// tools. Accepted or refused with il::Error; a crash, a sanitizer report or a hang is a finding.
// The step and output limits are lowered so that each input runs quickly.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/chat_template.h"

namespace {

const nlohmann::ordered_json& conversation() {
  static const auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "sys"},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Read <b>this</b>"}]},
    {"role": "assistant", "content": "<think>\nhm\n</think>\n\nok",
     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1.5}}}]},
    {"role": "tool", "content": "{\"y\": null}"},
    {"role": "user", "content": "héllo 世界"}
  ])");
  return messages;
}

const nlohmann::ordered_json& extra() {
  static const auto vars = nlohmann::ordered_json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false
  })");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  il::text::jinja::Limits limits;
  limits.max_steps = 20'000;
  limits.max_output_bytes = 1 << 20;
  try {
    const il::text::ChatTemplate t(std::string(reinterpret_cast<const char*>(data), size), "fuzz.jinja",
                                   limits);
    t.render(conversation(), true, extra());
  } catch (const il::Error&) {
  }
  return 0;
}
