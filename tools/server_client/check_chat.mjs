// Calls inferencelayer serve's /v1/chat/completions through the official openai client with a
// page image (a data: URI), streamed and whole, and compares the text with what transformers
// generated for the same page (tests/fixtures/glm-ocr-pipeline/expected.json).
//
//   node check_chat.mjs BASE_URL API_KEY PAGE.png EXPECTED_TEXT.txt MAX_TOKENS
//
// Exit status 0 when both answers equal the expected text, 1 otherwise.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const [baseURL, apiKey, pageFile, expectedFile, maxTokens] = process.argv.slice(2);
if (!maxTokens) {
  console.error('usage: node check_chat.mjs BASE_URL API_KEY PAGE.png EXPECTED_TEXT.txt MAX_TOKENS');
  process.exit(2);
}
const expected = readFileSync(expectedFile, 'utf8');
const image = `data:image/png;base64,${readFileSync(pageFile).toString('base64')}`;
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0 });
const messages = [
  {
    role: 'user',
    content: [
      { type: 'image_url', image_url: { url: image } },
      { type: 'text', text: 'Text Recognition:' },
    ],
  },
];
let failures = 0;

// Streamed: the deltas joined, the finish reason, and the usage chunk.
const stream = await client.chat.completions.create({
  model: 'glm-ocr',
  messages,
  max_tokens: Number(maxTokens),
  stream: true,
  stream_options: { include_usage: true },
});
let text = '';
let finish = null;
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    text += choice.delta?.content ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
if (text !== expected) {
  console.error(`streamed text ${JSON.stringify(text)} != expected ${JSON.stringify(expected)}`);
  failures++;
}
if (finish !== 'length') {
  console.error(`streamed finish_reason ${finish}`);
  failures++;
}
if (!usage || usage.completion_tokens !== Number(maxTokens)) {
  console.error(`streamed usage ${JSON.stringify(usage)}`);
  failures++;
}

// Whole.
const whole = await client.chat.completions.create({ model: 'glm-ocr', messages, max_tokens: Number(maxTokens) });
if (whole.choices[0].message.content !== expected) {
  console.error(`whole text ${JSON.stringify(whole.choices[0].message.content)} != expected`);
  failures++;
}

// A refused request comes back as the client's error class.
try {
  await client.chat.completions.create({ model: 'glm-ocr', messages, max_tokens: 8, n: 3 });
  console.error('n = 3 was accepted');
  failures++;
} catch (e) {
  if (!(e instanceof OpenAI.APIError) || !e.message.includes("'n'")) {
    console.error(`n = 3 gave ${e}`);
    failures++;
  }
}

if (failures) process.exit(1);
console.log(`ok: streamed (${chunks} chunks) and whole chat completions with an image equal transformers' text`);
