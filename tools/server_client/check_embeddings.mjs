// Calls inferencelayer serve's /v1/embeddings through the official openai client and compares
// the vectors with the ones `inferencelayer embed` wrote for the same texts.
//
//   node check_embeddings.mjs BASE_URL API_KEY TEXTS.json EXPECTED.jsonl
//
// TEXTS.json: a JSON array of strings. EXPECTED.jsonl: one {"embedding": [...]} per text.
// Exit status 0 when every vector matches within 1e-5 (max abs), 1 otherwise.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const [baseURL, apiKey, textsFile, expectedFile] = process.argv.slice(2);
if (!expectedFile) {
  console.error('usage: node check_embeddings.mjs BASE_URL API_KEY TEXTS.json EXPECTED.jsonl');
  process.exit(2);
}
const texts = JSON.parse(readFileSync(textsFile, 'utf8'));
const expected = readFileSync(expectedFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l).embedding);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0 });

let failures = 0;
function compare(label, got, want) {
  if (got.length !== want.length) {
    console.error(`${label}: ${got.length} values, expected ${want.length}`);
    failures++;
    return;
  }
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  if (!(worst <= 1e-5)) {
    console.error(`${label}: max abs difference ${worst}`);
    failures++;
  }
}

// The client's default asks for base64 and decodes it; also ask for floats explicitly.
for (const format of [undefined, 'float']) {
  const res = await client.embeddings.create({ model: 'fixture', input: texts, encoding_format: format });
  const name = format ?? 'default (base64)';
  if (res.data.length !== texts.length) {
    console.error(`${name}: ${res.data.length} embeddings for ${texts.length} texts`);
    failures++;
    continue;
  }
  res.data.forEach((d, i) => compare(`${name} input ${i}`, Array.from(d.embedding), expected[d.index]));
  if (!(res.usage.prompt_tokens > 0 && res.usage.total_tokens === res.usage.prompt_tokens)) {
    console.error(`${name}: bad usage ${JSON.stringify(res.usage)}`);
    failures++;
  }
}
const single = await client.embeddings.create({ model: 'fixture', input: texts[0] });
compare('single string', Array.from(single.data[0].embedding), expected[0]);

// A wrong key must come back as the client's authentication error.
const wrong = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: `${apiKey}-wrong`, maxRetries: 0 });
try {
  await wrong.embeddings.create({ model: 'fixture', input: 'x' });
  console.error('a wrong API key was accepted');
  failures++;
} catch (e) {
  if (!(e instanceof OpenAI.AuthenticationError)) {
    console.error(`a wrong API key gave ${e}`);
    failures++;
  }
}

if (failures) process.exit(1);
console.log(`ok: ${texts.length} texts, default (base64) and float formats, single string, wrong key refused`);
