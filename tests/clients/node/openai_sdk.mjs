// The `openai` Node SDK against the gateway (baseURL = the gateway's /v1): for each model of the
// spec, a chat completion, a streamed one, a Responses call and a streamed Responses call.
// Spec (CLIENT_SPEC, JSON): base_url, key, models. Prints one JSON object:
// {"<model>": {"chat": {...}, "stream": {...}, "responses": {...}, "responses_stream": {...}}},
// a case that threw as {"error": "..."}.
import OpenAI from "openai";

import { report } from "./report.mjs";

const spec = JSON.parse(process.env.CLIENT_SPEC);
const client = new OpenAI({ baseURL: `${spec.base_url}/v1`, apiKey: spec.key, maxRetries: 0 });

async function chat(model) {
  const reply = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Hello there" }],
  });
  return { text: reply.choices[0].message.content, finish: reply.choices[0].finish_reason };
}

async function stream(model) {
  const chunks = [];
  const events = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Stream a short reply please" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage = null;
  for await (const chunk of events) {
    const delta = chunk.choices[0]?.delta?.content;
    if (delta) chunks.push(delta);
    if (chunk.usage) usage = chunk.usage;
  }
  return { text: chunks.join(""), chunks: chunks.length, usage };
}

async function responses(model) {
  const reply = await client.responses.create({ model, input: "Hello there" });
  return { text: reply.output_text, status: reply.status };
}

// A streamed response object carries no `output_text` helper: the text is in its message items.
const outputText = (response) =>
  response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content.filter((part) => part.type === "output_text").map((part) => part.text))
    .join("");

async function responsesStream(model) {
  const deltas = [];
  let final = null;
  const events = await client.responses.create({ model, input: "Stream a short reply please", stream: true });
  for await (const event of events) {
    if (event.type === "response.output_text.delta") deltas.push(event.delta);
    if (event.type === "response.completed") final = outputText(event.response);
  }
  return { text: deltas.join(""), chunks: deltas.length, final };
}

const cases = { chat, stream, responses, responses_stream: responsesStream };
await report(spec.models.map((id) => [id, cases, id]));
