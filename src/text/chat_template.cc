#include "text/chat_template.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace il::text {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  check(static_cast<bool>(in), p.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Unknown filters and tests are errors when the template is loaded, as in jinja2.
void check_names(const jinja::Expr& e, const std::string& source) {
  if (e.kind == jinja::Expr::Kind::kFilter && !jinja::has_filter(e.name)) {
    throw make_error(source, ":", e.line, ":", e.col, ": template syntax error: no filter named '",
                     e.name, "'");
  }
  if (e.kind == jinja::Expr::Kind::kTest && !jinja::has_test(e.name)) {
    throw make_error(source, ":", e.line, ":", e.col, ": template syntax error: no test named '",
                     e.name, "'");
  }
  for (const auto& k : e.kids) {
    if (k) check_names(*k, source);
  }
  for (const auto& kv : e.kwargs) check_names(*kv.second, source);
}

void check_names(const jinja::Body& body, const std::string& source) {
  for (const auto& s : body) {
    if (s->expr) check_names(*s->expr, source);
    if (s->filter) check_names(*s->filter, source);
    for (const auto& c : s->conds) check_names(*c, source);
    for (const auto& p : s->params) {
      if (p.second) check_names(*p.second, source);
    }
    for (const auto& b : s->bodies) check_names(b, source);
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string source_name, jinja::Limits limits)
    : source_(std::move(source)), source_name_(std::move(source_name)), limits_(limits) {
  const auto tokens = jinja::tokenize(source_, source_name_);
  auto body = std::make_shared<jinja::Body>(jinja::parse(tokens, source_name_));
  check_names(*body, source_name_);
  body_ = std::move(body);
}

ChatTemplate ChatTemplate::from_folder(const std::filesystem::path& dir) {
  using J = nlohmann::ordered_json;
  const auto config_path = dir / "tokenizer_config.json";
  J config = J::object();
  if (std::filesystem::exists(config_path)) {
    try {
      config = J::parse(read_file(config_path));
    } catch (const J::exception& e) {
      throw make_error(config_path.string(), ": invalid JSON: ", e.what());
    }
    check(config.is_object(), config_path.string(), ": expected a JSON object");
  }
  const auto jinja_path = dir / "chat_template.jinja";
  std::string source;
  std::string name;
  if (std::filesystem::exists(jinja_path)) {
    source = read_file(jinja_path);
    name = jinja_path.string();
  } else if (config.contains("chat_template")) {
    const J& t = config["chat_template"];
    name = config_path.string() + " chat_template";
    if (t.is_string()) {
      source = t.get<std::string>();
    } else if (t.is_array()) {
      bool found = false;
      for (const J& entry : t) {
        if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
            entry["template"].is_string()) {
          source = entry["template"].get<std::string>();
          found = true;
        }
      }
      check(found, config_path.string(), ": chat_template list has no template named \"default\"");
      name += "[default]";
    } else {
      throw make_error(config_path.string(), ": chat_template must be a string or a list");
    }
  } else {
    throw make_error(dir.string(),
                     ": no chat template (neither chat_template.jinja nor a chat_template in "
                     "tokenizer_config.json)");
  }
  ChatTemplate tmpl(std::move(source), std::move(name));
  J tokens = J::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                          "cls_token", "mask_token"}) {
    if (!config.contains(key)) continue;
    const J& v = config[key];
    if (v.is_string()) {
      tokens[key] = v;
    } else if (v.is_object() && v.contains("content") && v["content"].is_string()) {
      tokens[key] = v["content"];
    }
  }
  tmpl.special_tokens_ = std::move(tokens);
  return tmpl;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra_vars) const {
  check(messages.is_array(), source_name_, ": messages must be a JSON array");
  check(extra_vars.is_null() || extra_vars.is_object(), source_name_,
        ": extra template variables must be a JSON object");
  jinja::Value vars = jinja::Value::make_dict();
  for (auto it = special_tokens_.begin(); it != special_tokens_.end(); ++it) {
    vars.dict->set(it.key(), jinja::from_json(it.value()));
  }
  vars.dict->set("messages", jinja::from_json(messages));
  // transformers always passes tools and documents (None when absent).
  vars.dict->set("tools", jinja::Value::none());
  vars.dict->set("documents", jinja::Value::none());
  vars.dict->set("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  if (extra_vars.is_object()) {
    for (auto it = extra_vars.begin(); it != extra_vars.end(); ++it) {
      vars.dict->set(it.key(), jinja::from_json(it.value()));
    }
  }
  jinja::Interpreter interp(source_name_, limits_);
  return interp.render(*body_, vars);
}

}  // namespace il::text
