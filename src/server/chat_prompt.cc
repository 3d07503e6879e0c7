#include "server/chat_prompt.h"

#include <filesystem>

#include "core/error.h"
#include "server/api_error.h"

namespace il::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The URL of an image_url part: {"image_url": {"url": "..."}} or {"image_url": "..."}.
std::string image_url_of(const json& part, const std::string& where) {
  if (!part.contains("image_url")) throw validation_error(where + ": an image_url part needs 'image_url'");
  const json& v = part["image_url"];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("url") && v["url"].is_string()) return v["url"].get<std::string>();
  throw validation_error(where + ": 'image_url' must be {\"url\": \"data:...\"} or a string");
}

}  // namespace

std::shared_ptr<const text::ChatTemplate> load_chat_template(const std::string& folder) {
  if (folder.empty()) return nullptr;
  const std::filesystem::path dir(folder);
  const bool has = std::filesystem::exists(dir / "chat_template.jinja") ||
                   std::filesystem::exists(dir / "tokenizer_config.json");
  if (!has) return nullptr;
  try {
    return std::make_shared<const text::ChatTemplate>(text::ChatTemplate::from_folder(dir));
  } catch (const Error& e) {
    // A folder whose tokenizer_config.json holds no template: the chat route says so.
    if (!std::filesystem::exists(dir / "chat_template.jinja") &&
        std::string(e.what()).find("no chat template") != std::string::npos)
      return nullptr;
    throw;
  }
}

ChatPrompt build_chat_prompt(Context& ctx, const json& body) {
  // DeepSeek-OCR's folders have no template: its conversations are "plain", the contents in
  // order with "<image>" for each image, parts and messages joined by newlines, as the model
  // card's prompts ("<image>\n<|grounding|>Convert the document to markdown.").
  const bool plain = !ctx.chat_template && ctx.engine.info().plain_chat;
  std::string plain_text;
  const auto add_plain = [&](const std::string& piece) {
    if (!plain_text.empty()) plain_text += '\n';
    plain_text += piece;
  };
  if (!ctx.chat_template && !plain)
    throw unsupported_error("the model folder has no chat template (chat_template.jinja or tokenizer_config.json's "
                            "chat_template): use /v1/completions with a prompt");
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    throw validation_error("'messages' must be a non-empty list of messages");
  ChatPrompt out;
  std::vector<std::vector<std::uint8_t>> encoded;
  ojson messages = ojson::array();
  const json& list = body["messages"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw validation_error(where + " must be an object with a 'role'");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "developer")
      throw validation_error(where + ": role '" + role + "' is not one of system, user, assistant, tool");
    ojson msg = ojson::object();
    msg["role"] = role;
    const json content = m.contains("content") ? m["content"] : json(nullptr);
    if (content.is_string() || content.is_null()) {
      msg["content"] = content.is_null() ? ojson("") : ojson(content.get<std::string>());
      if (content.is_string()) add_plain(content.get<std::string>());
    } else if (content.is_array()) {
      ojson parts = ojson::array();
      for (std::size_t k = 0; k < content.size(); ++k) {
        const json& part = content[k];
        const std::string pw = where + ".content[" + std::to_string(k) + "]";
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
          throw validation_error(pw + " must be an object with a 'type'");
        const std::string type = part["type"].get<std::string>();
        if (type == "text") {
          if (!part.contains("text") || !part["text"].is_string())
            throw validation_error(pw + ": a text part needs 'text' (a string)");
          parts.push_back(ojson{{"type", "text"}, {"text", part["text"].get<std::string>()}});
          add_plain(part["text"].get<std::string>());
        } else if (type == "image_url" || type == "image") {
          if (!ctx.engine.info().capabilities.image_input && !ctx.engine.info().capabilities.ocr)
            throw validation_error(pw + ": this model takes no images");
          const std::string url = type == "image" && part.contains("image") && part["image"].is_string()
                                      ? part["image"].get<std::string>()
                                      : image_url_of(part, pw);
          encoded.push_back(image_bytes(url, pw, ctx.options.url_fetch));
          // HF chat templates mark an image with a part of type "image" (transformers' processor
          // convention); the bytes travel separately.
          parts.push_back(ojson{{"type", "image"}});
          add_plain("<image>");
        } else {
          throw validation_error(pw + ": part type '" + type + "' is not supported (text, image_url)");
        }
      }
      msg["content"] = std::move(parts);
    } else {
      throw validation_error(where + ": 'content' must be a string or a list of parts");
    }
    messages.push_back(std::move(msg));
  }
  if (encoded.size() > ctx.options.max_images_per_request)
    throw ApiError(413, "Validation",
                   std::to_string(encoded.size()) + " images in one request; the limit is " +
                       std::to_string(ctx.options.max_images_per_request) + " (--max-images-per-request)");

  std::string text = plain_text;
  if (!plain) {
    try {
      text = ctx.chat_template->render(messages, true);
    } catch (const Error& e) {
      throw validation_error(std::string("the chat template refused the messages: ") + e.what());
    }
  }
  TokenizeOptions o;
  o.add_special_tokens = plain;  // the plain format's BOS; a template writes its own
  o.limit_length = false;
  o.truncate = false;
  std::vector<int32_t> ids = ctx.engine.tokenize_with(text, o).ids;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    try {
      out.images.push_back(ctx.engine.load_prompt_image(encoded[i], "image " + std::to_string(i + 1)));
    } catch (const Error& e) {
      throw validation_error(e.what());
    }
  }
  if (!out.images.empty()) {
    try {
      ids = ctx.engine.expand_image_placeholders(ids, out.images);
    } catch (const Error& e) {
      throw validation_error(std::string("the chat template's image placeholders: ") + e.what());
    }
  }
  out.input_ids = std::move(ids);
  return out;
}

}  // namespace il::server
