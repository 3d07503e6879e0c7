// The chat template of a Hugging Face model folder, rendered as transformers renders it
// (jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson,
// raise_exception and strftime_now) by our own jinja2-subset interpreter (text/jinja/).
//
//   auto tmpl = il::text::ChatTemplate::from_folder("/models/Qwen3-0.6B");
//   std::string prompt = tmpl.render(messages, /*add_generation_prompt=*/true);
//
// Messages (and tools etc.) are nlohmann::ordered_json so that tojson keeps the key order the
// client sent, as Python dicts do.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "text/jinja/interpreter.h"

namespace il::text {

class ChatTemplate {
 public:
  // Compiles template source; `source_name` names it in errors (e.g. "chat_template.jinja").
  // Throws il::Error "<source_name>:<line>:<col>: template syntax error: ..." for bad syntax,
  // unknown filters or tests.
  ChatTemplate(std::string source, std::string source_name, jinja::Limits limits = {});

  // Reads dir/chat_template.jinja, else tokenizer_config.json's "chat_template" (a string, or a
  // list of {name, template} from which "default" is taken). The special tokens bos_token,
  // eos_token, unk_token, pad_token, sep_token, cls_token and mask_token of tokenizer_config.json
  // (a string or {"content": ...}) become template variables. Throws il::Error when the folder
  // has no chat template.
  static ChatTemplate from_folder(const std::filesystem::path& dir);

  // Renders `messages` (a JSON array). extra_vars (a JSON object or null) adds or overrides
  // variables: tools, documents, enable_thinking, bos_token, ... Throws il::Error for
  // raise_exception ("chat template raised an exception: <message>") and runtime errors, with
  // the place in the template.
  // Safe to call from several threads at once (each call has its own interpreter state).
  // A plain nlohmann::json converts implicitly (its object keys come sorted, not as sent).
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra_vars = nullptr) const;

  const std::string& source() const { return source_; }
  // The special-token variables read from the folder (a JSON object of strings).
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  void set_special_tokens(nlohmann::ordered_json tokens) { special_tokens_ = std::move(tokens); }

 private:
  std::string source_;
  std::string source_name_;
  jinja::Limits limits_;
  std::shared_ptr<const jinja::Body> body_;
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
};

}  // namespace il::text
