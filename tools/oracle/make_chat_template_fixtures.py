#!/usr/bin/env python3
"""Renders our test chat templates with Python jinja2, set up as transformers sets it up
(src/transformers/utils/chat_template_utils.py: ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension; its own tojson filter calling json.dumps with
ensure_ascii=False; the globals raise_exception and strftime_now; the variables messages, tools,
documents, add_generation_prompt plus the special tokens), and writes the expected outputs to
tests/fixtures/chat-templates/renders.json for tests/text/chat_template_test.cc.

Also usable as a one-off oracle: --render TEMPLATE_FILE CASES_JSON prints renders as JSON
(used by the real-template test, which fetches third-party templates at run time).

Usage: python3 tools/oracle/make_chat_template_fixtures.py [--out DIR]
"""
import argparse
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "chat-templates")


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    # transformers also registers an extension for {% generation %} (assistant-token masks);
    # its text renders unchanged, and our templates do not use it.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, messages, add_generation_prompt, extra):
    variables = {"messages": messages, "tools": None, "documents": None,
                 "add_generation_prompt": add_generation_prompt}
    variables.update(extra)
    try:
        return {"output": env.from_string(source).render(**variables)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e)}
    except Exception as e:  # e.g. a TypeError inside the template: we only require an error too
        return {"error": str(e), "python_exception": type(e).__name__}


SPECIAL = {"bos_token": "<bos>", "eos_token": "</s>"}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city, in °C",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city"},
            "days": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "noop", "parameters": {}}},
]

MESSAGE_SETS = {
    "basic": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "  Hello!  "},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "no_system": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "second"},
        {"role": "user", "content": "third"},
    ],
    "bad_alternation": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ],
    "tool_use": [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "<think>\nNeed two calls.\n</think>\n\nChecking.",
         "tool_calls": [
             {"type": "function", "function": {"name": "get_weather",
                                               "arguments": {"city": "Paris", "days": 2}}},
             {"type": "function", "function": {"name": "get_weather",
                                               "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"temp\": -3}"},
        {"role": "assistant", "content": "<think>Compare.</think>Paris is warmer."},
        {"role": "user", "content": "<tool_response>x</tool_response>"},
    ],
    "reasoning": [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "reasoning_content": "\nthought one\n"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "<think>\nthought two\n</think>\n\nA2"},
    ],
    "content_list": [
        {"role": "user", "content": [{"type": "image", "image": "page.png"},
                                     {"type": "text", "text": "Text Recognition:"}]},
    ],
    "content_mixed": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "Look: "}, {"type": "image"},
                                     {"type": "text", "text": " and "}, {"type": "image"}]},
        {"role": "assistant", "content": "Two images."},
        {"role": "user", "content": "plain"},
    ],
    "unicode": [
        {"role": "user", "content": "héllo 世界 \"quotes\" 'single' \\ </s> 🙂\n\ttab"},
    ],
}

# (template file, message sets, extra variables)
CASES = [
    ("chatml.jinja", ["basic", "no_system", "unicode"], [{}]),
    ("alternation.jinja", ["basic", "no_system", "bad_alternation", "unicode"], [SPECIAL]),
    ("tools.jinja", ["basic", "tool_use", "reasoning", "unicode"],
     [{}, {"tools": TOOLS}, {"enable_thinking": False}]),
    ("content_list.jinja", ["content_list", "content_mixed", "basic"], [{}]),
    ("features.jinja", ["basic"], [{}]),
    ("whitespace.jinja", ["basic"], [{}]),
    ("macros.jinja", ["basic", "content_mixed"], [{}]),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=FIXTURES)
    parser.add_argument("--render", nargs=2, metavar=("TEMPLATE", "CASES_JSON"))
    args = parser.parse_args()
    env = make_environment()
    if args.render:
        with open(args.render[0], encoding="utf-8") as f:
            source = f.read()
        with open(args.render[1], encoding="utf-8") as f:
            cases = json.load(f)
        out = [render(env, source, c["messages"], c["add_generation_prompt"], c.get("extra", {}))
               for c in cases]
        json.dump(out, sys.stdout, ensure_ascii=False)
        return
    cases = []
    for template, sets, extras in CASES:
        with open(os.path.join(FIXTURES, "templates", template), encoding="utf-8") as f:
            source = f.read()
        for set_name in sets:
            for extra in extras:
                for agp in (False, True):
                    case = {"template": template, "messages": set_name,
                            "add_generation_prompt": agp, "extra": extra}
                    case.update(render(env, source, MESSAGE_SETS[set_name], agp, extra))
                    cases.append(case)
    doc = {"generator": "tools/oracle/make_chat_template_fixtures.py",
           "jinja2_version": jinja2.__version__, "message_sets": MESSAGE_SETS, "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "renders.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c)
    print(f"jinja2 {jinja2.__version__}: wrote {len(cases)} cases ({errors} raise) to {path}")


if __name__ == "__main__":
    main()
