#!/usr/bin/env node
// Writes tests/text/corpus/{tricky,random}.jsonl: text the tokenizer conformance test feeds to
// both the Hugging Face library and our tokenizer. Regenerate with
// `node make_corpus.js ../../tests/text/corpus`; the output is committed so a change shows up as
// a diff of the corpus.
"use strict";
const fs = require("fs");

const cp = (...codes) => String.fromCodePoint(...codes);
const base = [
  // plain text, punctuation, contractions
  "Hello world!", "hello world", "The quick brown fox jumps over the lazy dog.",
  "I don't think it's 'right', do you?", "I'm here; you're there: we've been everywhere...",
  "Mr. Smith paid $3.50 for a 2nd-hand book (really!) at 10:30am.",
  "e-mail: user@example.org, web: https://example.com/path?q=1&b=2#frag",
  "int main() { return a[i] + b->c * 2 % 3 ^ ~x | y; }", "C++ / C# / F# / .NET", "#hashtag @mention",
  "3.14159 1,000,000 2nd 10km 1e-9 0x1F", "a.b.c", "...", "!!!???", "\"quoted\" `backticks` ~tilde~",
  // accents, precomposed and combining
  "café naïve résumé Ångström Crème brûlée", "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
  "n\u0303 a\u0301\u0327 e\u0327\u0301 o\u031b\u0323", "ÀÉÎÕÜ àéîõü ÇçÑñ", "Ærøskøbing Łódź Dvořák Škoda",
  "İstanbul ıi İI", "ΣΊΣΥΦΟΣ σίσυφος", "ǅemal ǈ ǋ", "ẞ straße STRASSE", "\u212a kelvin \u212b angstrom \u2126 ohm",
  "Ǖ ǖ Ǘ ǘ ǚ", "ḱ ḿ ṕ ǹ", "a\u0300\u0301\u0302\u0303\u0304", "\u0301leading combining", "x\u20dd y\u0903z",
  // CJK, Hangul, kana
  "我爱北京天安门", "日本語のテキストです。", "BERT是一个模型，用于自然语言处理。", "漢字かなカナ混じり文",
  "안녕하세요 세계", "한국어 텍스트입니다.", "\u1100\u1161\u11a8 \u1112\u1161\u11ab", "ｶﾀｶﾅ ﾃｽﾄ ﾊﾞﾋﾞﾌﾞ",
  "ＡＢＣ１２３！？", "𠀀𠀁 𪜀 𫝀 𬺰 \u3400\u4dbf", "中文English混合mixed", "〇一二三", "「引用」『二重』【括弧】",
  // emoji
  "I love 🤗 and 🐍!", "👍🏽 thumbs", "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪🇯🇵 flags", "❤️ ❤ ♥", "1️⃣ #️⃣", "🏳️‍🌈", "😀😃😄😁",
  "emoji🤖inside", "🥰 new emoji",
  // RTL and other scripts
  "مرحبا بالعالم", "مَرْحَبًا", "שלום עולם", "שָׁלוֹם", "Hello مرحبا שלום mixed", "‏RTL mark‎ LTR mark",
  "नमस्ते दुनिया", "สวัสดีครับ", "Ελληνικά κείμενο", "Русский язык, ЁЖИК", "Հայերեն", "ქართული", "አማርኛ",
  // whitespace and controls
  "a\tb\r\nc\rd\ne", "tab\t\tdouble", "\u000b vertical \u000c formfeed", "next\u0085line", "line\u2028sep\u2029para",
  "nul\u0000inside", "\u0000", "ctl\u0001\u001f\u007f end", "c1\u0080\u009f end", "soft\u00adhyphen",
  "\ufeffbom start", "replacement \ufffd char", "a\u00a0b nbsp", "a\u200bb zwsp", "a\u3000b ideographic",
  "a\u2009b thin\u202fnarrow", "mongolian\u180evowel", "zwj\u200dzwnj\u200c", "bidi\u202e override\u202c",
  "\u2066isolate\u2069", "word\u2060joiner",
  // long words and the 100-character limit
  "a".repeat(99), "b".repeat(100), "c".repeat(101), "x".repeat(120),
  "supercalifragilisticexpialidocious".repeat(4), "é".repeat(100), "é".repeat(101),
  "e\u0301".repeat(60), "unbelievable" + "ness".repeat(25), "pneumonoultramicroscopicsilicovolcanoconiosis",
  // empty and spacing
  "", " ", "   ", "\t\n", "  hello  ", " leading", "trailing ", "many     spaces    here",
  // special tokens typed in text
  "[CLS] hello [SEP]", "[MASK]", "a[MASK]b", "the [MASK] sat on the mat", "[mask] lowercase", "[SEP][SEP]",
  "[UNK] [PAD]", "[ CLS ]", "[CLS", "CLS]", "[[CLS]]", "x[SEP]y[CLS]z", " [MASK] ", "[MASK][MASK] [MASK]",
  // punctuation from Unicode
  "“quoted” ‘single’ — dash – «guillemets» ¿qué? ¡hola! …", "¶ § † ‡ • ‰ ′ ″", "℃ ™ © ® ° ±",
  "∑ ∫ √ ≤ ≥ ≠ ∞", "$ € £ ¥ ₹ ₿", "a\u2e43b new punct", "a\u2e42b", "x\u0e5ay", "ﬁ ﬂ ﬀ ligatures",
  "１２３ ｱｲｳ", "½ ¾ ² ³ ⅷ", "① ② ⑩", "Ⓐ ⓑ", "\ue000 private \udb80\udc00",
  cp(0x378) + " unassigned " + cp(0xe0080), "adlam \ud83a\udd44 mark", "\u{13430}egypt format",
  // assorted
  "The year 2023 saw GPT-4, LLaMA-2 & co.", "HTTP/1.1 200 OK\r\nContent-Type: text/html",
  "snake_case camelCase PascalCase kebab-case", "100% of 50% is 25%.", "don't won't can't shouldn't",
  "U.S.A. e.g. i.e. etc.", "<html><body>Hi</body></html>", "{\"json\": [1, 2, 3]}",
  "Tschüß, Grüße aus Köln!", "Ça va? Où est la gare?", "¿Dónde está el baño?", "Zürich, Genève, Bern",
  "São Paulo, Brasília", "Kraków – Gdańsk", "İzmir'de güzel bir gün", "Việt Nam xin chào",
  // byte-level BPE files: their special tokens typed in text, contractions in any case (the
  // split regexes are case-insensitive there), digit runs, whitespace runs and line breaks
  "<|endoftext|>hello<|im_start|>user\nHi there<|im_end|>", "<bos><start_of_turn>user\nhi<end_of_turn>",
  "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nok<|eot_id|>", "<EOT> <META> x",
  " <mask> tail", "say hello world twice: hello world", "<s> </s> <unk> <pad> <0x41> ▁▁ ▁x",
  "He'S I'LL we'Re you'VE it'D don'T ſ'ſ'ſ K'k", "'s 's's 'll've", "1234567890 12 123 1234 12345",
  "٣٤٥ ١٢٣ ༣༤ ⅫⅩ", "a\n\n\nb", "a  \n  b", "trailing spaces   ", "\t\t tabbed \t", "x\r\n\r\ny",
  "\n", "CamelCaseWordsHere and ALLCAPS and mIxEd", "ünïcödé".repeat(30),
  "lorem ipsum dolor sit amet, consectetur adipiscing elit; ".repeat(9),
];

const lines = [];
for (const text of base) lines.push({ text });
// The same texts without special tokens, every third one.
base.forEach((text, i) => { if (i % 3 === 0) lines.push({ text, add_special_tokens: false }); });
// Pairs: each text with the next one; some without special tokens; empty sides.
for (let i = 0; i + 1 < base.length; i += 2) lines.push({ text: base[i], pair: base[i + 1] });
for (let i = 1; i + 1 < base.length; i += 7) {
  lines.push({ text: base[i], pair: base[i + 1], add_special_tokens: false });
}
lines.push({ text: "", pair: "" }, { text: "hello", pair: "" }, { text: "", pair: "world" },
           { text: "[CLS] a", pair: "b [SEP]" }, { text: "x".repeat(120), pair: "short" },
           { text: "one two three four five six seven eight nine ten", pair: "a b" },
           { text: "a b", pair: "one two three four five six seven eight nine ten eleven twelve" });

// A second, random corpus: seeded, so the file is reproducible, drawing characters from pools
// that stress the normalizers (marks out of canonical order, compatibility forms, controls,
// format characters, characters newer than the library's Unicode tables) and the added tokens.
function randomCorpus() {
  let seed = 20240611;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const range = (a, b) => cp(a + Math.floor(rnd() * (b - a + 1)));
  const pools = [
    () => pick(["hello", "world", "the", "un", "##able", "token", "izer", "Straße", "naïve"]),
    () => pick([" ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u2028"]),
    () => range(0x21, 0x7e), () => range(0x41, 0x5a), () => range(0x61, 0x7a),
    () => range(0xc0, 0x17f), () => range(0x300, 0x36f), () => range(0x370, 0x3ff),
    () => range(0x400, 0x4ff), () => range(0x590, 0x5ff), () => range(0x600, 0x6ff),
    () => range(0x900, 0x97f), () => range(0xe00, 0xe7f), () => range(0x1100, 0x11ff),
    () => range(0x1e00, 0x1eff), () => range(0x2000, 0x206f), () => range(0x2070, 0x218f),
    () => range(0x2460, 0x24ff), () => range(0x2e00, 0x2e5d), () => range(0x3040, 0x30ff),
    () => range(0x3400, 0x3410), () => range(0x4e00, 0x9fff), () => range(0xac00, 0xd7a3),
    () => range(0xf900, 0xfaff), () => range(0xfb00, 0xfb4f), () => range(0xfe30, 0xfe4f),
    () => range(0xff00, 0xffef), () => range(0x0, 0x1f), () => range(0x7f, 0x9f),
    () => range(0xe000, 0xe00f), () => range(0x1f300, 0x1f6ff), () => range(0x1f900, 0x1f9ff),
    () => pick(["\u200d", "\ufe0f", "\u{1f3fb}", "\u{1f1eb}\u{1f1f7}", "\u{20000}", "\u{2f800}"]),
    () => pick(["\u{1e944}", "\u{11d40}", "\u{13430}", "\u0378", "\u{e0061}", "\ufffd"]),
    () => pick(["[MASK]", "[SEP]", "[CLS]", "[UNK]", "[PAD]", "[mask]", "New York", "ab", "🤗"]),
    () => pick(["Hello World", " [ENT] ", "[ENT]", "mask]", "e\u0301", "a\u0323\u0302", "\u212b"]),
  ];
  const text = () => {
    const n = Math.floor(rnd() * 40);
    let s = "";
    for (let i = 0; i < n; i++) s += pick(pools)();
    return s;
  };
  const lines = [];
  for (let i = 0; i < 300; i++) {
    const line = { text: text() };
    if (rnd() < 0.3) line.pair = text();
    if (rnd() < 0.2) line.add_special_tokens = false;
    lines.push(line);
  }
  return lines;
}

const outDir = process.argv[2];
if (!outDir) { console.error("usage: make_corpus.js OUT_DIR"); process.exit(2); }
for (const [name, corpus] of [["tricky.jsonl", lines], ["random.jsonl", randomCorpus()]]) {
  const file = require("path").join(outDir, name);
  fs.writeFileSync(file, corpus.map((l) => JSON.stringify(l)).join("\n") + "\n");
  console.log(`wrote ${corpus.length} lines to ${file}`);
}
