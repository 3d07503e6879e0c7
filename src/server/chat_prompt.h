// The prompt of a /v1/chat/completions request: the messages through the folder's chat template
// (text/chat_template.h, rendered as transformers' apply_chat_template does), tokenized as
// transformers tokenizes a rendered template (the tokenizer's own special tokens not added: the
// template wrote them), the images of image_url parts decoded and preprocessed as the folder's
// processor does, each image's placeholder token expanded to its count of image tokens.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/context.h"
#include "text/chat_template.h"

namespace il::server {

struct ChatPrompt {
  std::vector<int32_t> input_ids;
  std::vector<PatchImage> images;
};

// The folder's template, or nullptr when it has none (the chat route then says so). Throws
// il::Error for a template that does not compile.
std::shared_ptr<const text::ChatTemplate> load_chat_template(const std::string& folder);

// `messages` (roles system / user / assistant / tool; content a string or a list of {type:
// text, text} and {type: image_url, image_url: {url} or url} parts, images as data: URIs or
// base64). Throws ApiError 422 naming the message and part for anything malformed, 413 for more
// images than --max-images-per-request.
ChatPrompt build_chat_prompt(Context& ctx, const nlohmann::json& body);

}  // namespace il::server
