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

# One-line templates of our own, each rendered over the "basic" messages with d and xs set:
# corners of Python's and jinja2's semantics (undefined values, formatting, errors).
SNIPPET_VARS = {"d": {"a": "v", "c": 1, "n": None}, "xs": [3, 1, 2], "s": "  Hello, World  "}
SNIPPETS = [
    "{{ nothing }}|{{ nothing is defined }}|{{ nothing | length }}|{{ nothing | list }}|{{ nothing | join }}",
    "{{ nothing | trim }}|{{ nothing | upper }}|{{ nothing | first }}|{{ nothing | string }}|{{ nothing | sort }}|{{ nothing | wordcount }}|{{ nothing | sum }}",
    "{{ nothing | int }}", "{{ nothing | float }}", "{{ nothing | indent }}", "{{ [] | last | attr('x') }}",
    "{{ nothing.attr }}", "{{ nothing[0] }}", "{{ nothing() }}", "{{ nothing + 1 }}", "{{ nothing | tojson }}",
    "{{ d.zz.y }}", "{{ d.a.zz }}|{{ d.n is none }}|{{ d.zz is none }}|{{ d['n'] }}",
    "{{ messages[10].role }}", "{{ messages[-1].content }}|{{ messages[-10] is defined }}",
    "{% for m in d.n %}x{% endfor %}", "{{ 1 < none }}", "{{ 'a' + 1 }}", "{{ [1] + (2,) }}",
    "{{ 1.5e300 * 1e300 }}|{{ -1.5e300 * 1e300 }}|{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 2 ** -1 }}|{{ 1e15 }}|{{ 1e16 }}|{{ 123456789012345678 }}",
    "{{ 7.5 // 2 }}|{{ -7.5 % 2 }}|{{ 7 % -3 }}|{{ -0.0 }}|{{ 3.0 == 3 }}|{{ 10 / 2.5 }}",
    "{{ s | trim }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.split(',') }}|{{ s.split() }}|{{ s.split(None, 1) }}",
    "{{ s | lower }}|{{ s | title }}|{{ s.upper() }}|{{ 'ÉCOLE straße' | lower }}|{{ 'école' | upper }}|{{ 'élan vital' | title }}",
    "{{ 'a\nb' | tojson }}|{{ '\u0001\u001f\u007f' | tojson }}|{{ '\t\r\b\f' | tojson }}|{{ 'é🙂' | tojson }}",
    "{{ d | tojson(indent=4) }}|{{ xs | tojson(indent='\t') }}|{{ {} | tojson(indent=2) }}|{{ [[]] | tojson(indent=1) }}",
    "{{ d | tojson(separators=(',', ':')) }}|{{ d | tojson(sort_keys=true) }}|{{ 1.0 | tojson }}|{{ 1e20 | tojson }}",
    "{{ xs[1:] }}|{{ xs[:-1] }}|{{ xs[::2] }}|{{ xs[::-1] }}|{{ xs[5:] }}|{{ xs[-100:100] }}|{{ 'héllo'[1:3] }}|{{ 'héllo'[::-1] }}",
    "{{ 'abc'[10] }}|{{ xs[3] }}|{{ xs['x'] }}|{{ d[0] }}",
    "{{ xs | map('string') | join('-') }}|{{ xs | map('abs') | list }}|{{ d | list }}|{{ d | length }}",
    "{{ [{'a': {'b': 1}}, {'a': {'b': 2}}] | map(attribute='a.b') | list }}|{{ [{'a': 1}, {}] | map(attribute='a', default=0) | list }}",
    "{{ ['b', 'A', 'c'] | sort }}|{{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}|{{ xs | sort(reverse=true) }}|{{ [{'k': 2}, {'k': 1}] | sort(attribute='k') }}",
    "{{ ['a', 'A', 'b'] | unique | list }}|{{ 'a b  c' | wordcount }}|{{ 3.7 | int }}|{{ '3.7' | int }}|{{ ' 12 ' | int }}|{{ '1e3' | float }}|{{ 'x' | float }}",
    "{{ 2.675 | round(2) }}|{{ 0.5 | round }}|{{ 1.5 | round }}|{{ 2.5 | round(0, 'floor') }}|{{ 2.1 | round(0, 'ceil') }}|{{ 5 | round }}",
    "{{ 'a,b,,c'.split(',') }}|{{ 'a b'.split(' ') }}|{{ ''.split(',') }}|{{ ''.split() }}|{{ 'x'.replace('', '-') }}|{{ 'aaa'.replace('a', 'b', 2) }}",
    "{{ 'Hello'.startswith('He') }}|{{ 'Hello'.endswith('lo') }}|{{ 'Hello'.startswith(('x', 'H')) }}|{{ 'Hello'.find('z') }}|{{ 'Hello'.count('l') }}",
    "{{ 'a' in 'abc' }}|{{ 1 in d }}|{{ 'a' in d }}|{{ none in xs }}|{{ [1] in [[1], 2] }}|{{ 'x' not in 'abc' }}",
    "{{ true and 'x' }}|{{ false or none }}|{{ none or 0 }}|{{ [] or {} }}|{{ not [] }}|{{ 'a' if 0 else 'b' if none else 'c' }}",
    "{{ xs is iterable }}|{{ 1 is iterable }}|{{ none is string }}|{{ xs is sequence }}|{{ 1 is integer }}|{{ 1.0 is float }}|{{ 'A' is upper }}|{{ xs is in [xs] }}",
    "{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 'q') }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.items() | list }}",
    "{{ (1, 2) + (3,) }}|{{ [1, 2] * 2 }}|{{ 'ab' * 0 }}|{{ -(3) }}|{{ +3 }}|{{ - -3 }}|{{ 2 ** 3 ** 2 }}|{{ 2 * 3 + 4 }}|{{ 1 - 2 - 3 }}",
    "{{ 'x' ~ 1 + 2 }}",
    "{{ 1 ~ 2 * 3 }}|{{ -2 | abs }}|{{ 'b' > 'a' }}|{{ [1, 2] < [1, 3] }}|{{ (1, 2) == (1, 2) }}|{{ [1, 2] == (1, 2) }}",
    r"""{{ "it's" }}|{{ 'a' 'b' }}|{{ '\n' }}|{{ '\\' }}|{{ '\x41\u00e9\U0001F642' }}|{{ 'tab\there' }}|{{ '\q' }}|{{ 'b\'o\"th' }}""",
    r"""{{ [1, 'two', 3.0, none, true, [], {}] }}|{{ {'k': [1, {'x': none}]} }}|{{ ('a',) }}|{{ () }}|{{ "q'uote" }}|{{ 'q"d' }}|{{ ['b\'o"th', 'new\nline\t\x01'] }}""",
    "{% set a = [1, 2] %}{% set b = a %}{{ b }}{% set a = 3 %}{{ b }}{{ a }}",
    "{% set ns = namespace(items=[], n=0) %}{% for x in xs %}{% set ns.items = ns.items + [x * 2] %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.items }}{{ ns.n }}",
    "{% for x in xs %}{% for y in 'ab' %}{{ loop.index }}{{ y }}{% endfor %}{{ loop.index }}{% endfor %}",
    "{% for x in xs %}{{ loop.cycle is defined }}{% break %}{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}",
    "{% for i in range(3) %}{% if loop.last %}{{ i }}{% endif %}{% endfor %}|{{ range(5, 0, -2) | list }}|{{ range(0) | list }}",
    "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m() }}",
    "{% macro outer(x) %}<{{ inner(x) }}>{% endmacro %}{% macro inner(y) %}{{ y | upper }}{% endmacro %}{{ outer('q') }}",
    "{% set x = 1 %}{% macro show() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ show() }}",
    "{% if messages %}{% set found = 'yes' %}{% endif %}{{ found }}",
    "{%- for m in messages if m.role != 'system' -%}{{ loop.index }}:{{ m.role }} {% endfor -%}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}|{{ messages | map(attribute='role') | unique | join(',') }}|{{ messages | rejectattr('role', 'in', ['user', 'system']) | map(attribute='content') | first }}",
    "{{ messages[0].content | default('x', true) }}|{{ messages | last | attr('role') if false else 'skip' }}",
    "a  \n  {%- if true %}b{% endif -%}  \n  c",
    "  {% if true %}\n    x\n  {% endif %}\n  {{ 'y' }}\n{# c #}\n  {# d #}  z\n",
    "{%- set x -%}\n  inner  \n{%- endset -%}[{{ x }}]",
    "{{ raise_exception('Custom: ' ~ messages | length) }}",
    "{{ strftime_now('%Y') | length }}",
    "{% if d is mapping and d.a is string and d.c is number and d.n is none and d is not string %}ok{% endif %}",
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
    snippets = []
    for source in SNIPPETS:
        snippet = {"template": source}
        snippet.update(render(env, source, MESSAGE_SETS["basic"], False, SNIPPET_VARS))
        snippets.append(snippet)
    doc = {"generator": "tools/oracle/make_chat_template_fixtures.py",
           "jinja2_version": jinja2.__version__, "message_sets": MESSAGE_SETS, "cases": cases,
           "snippet_vars": SNIPPET_VARS, "snippets": snippets}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "renders.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c)
    print(f"jinja2 {jinja2.__version__}: wrote {len(cases)} cases ({errors} raise) to {path}")


if __name__ == "__main__":
    main()
