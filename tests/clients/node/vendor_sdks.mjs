// The Anthropic and Google Gen AI Node SDKs against the gateway, each as its docs say for another
// endpoint: `new Anthropic({baseURL: <the gateway's root>, apiKey})` and
// `new GoogleGenAI({apiKey, httpOptions: {baseUrl: <the gateway's root>}})`. For each model of
// the spec: a call, a stream, a tool round trip (the tool's result sent back for the answer),
// a token count and the model listing.
// Spec (CLIENT_SPEC, JSON): base_url, key, models, nonce. Prints one JSON object:
// {"<sdk>:<model>": {"text": {...}, "stream": {...}, "tool": {...}, "count": {...}, "list": {...}}},
// a case that threw as {"error": "..."}.
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI, Type } from "@google/genai";

import { report } from "./report.mjs";

const spec = JSON.parse(process.env.CLIENT_SPEC);
const HELLO = "Hello there";
const STREAM = "Stream a short reply please";
const ASK = "What is the weather in Paris? Use get_weather.";
const weather = (city) => `${spec.nonce} in ${city}`;

const anthropic = new Anthropic({ baseURL: spec.base_url, apiKey: spec.key, maxRetries: 0 });
const user = (content) => [{ role: "user", content }];
const textOf = (message) =>
  message.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");

const anthropicCases = {
  async text(model) {
    const message = await anthropic.messages.create({ model, max_tokens: 256, messages: user(HELLO) });
    return { text: textOf(message), finish: message.stop_reason };
  },
  async stream(model) {
    const deltas = [];
    const stream = anthropic.messages.stream({ model, max_tokens: 256, messages: user(STREAM) });
    stream.on("text", (delta) => deltas.push(delta));
    const final = await stream.finalMessage();
    return { text: deltas.join(""), chunks: deltas.length, final: textOf(final), usage: final.usage };
  },
  async tool(model) {
    const tools = [
      {
        name: "get_weather",
        description: "Get the current weather in a city",
        input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ];
    const messages = user(ASK);
    const first = await anthropic.messages.create({ model, max_tokens: 256, messages, tools });
    const calls = first.content.filter((block) => block.type === "tool_use");
    messages.push({ role: "assistant", content: first.content });
    messages.push({
      role: "user",
      content: calls.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: weather(call.input.city) })),
    });
    const final = await anthropic.messages.create({ model, max_tokens: 256, messages, tools });
    return { text: textOf(final), calls: calls.map((call) => call.input.city), stop: first.stop_reason };
  },
  async count(model) {
    const counted = await anthropic.messages.countTokens({ model, messages: user(HELLO) });
    return { tokens: counted.input_tokens };
  },
  async list() {
    const ids = [];
    for await (const info of anthropic.models.list()) ids.push(info.id);
    return { ids };
  },
};

const google = new GoogleGenAI({ apiKey: spec.key, httpOptions: { baseUrl: spec.base_url } });

const googleCases = {
  async text(model) {
    const response = await google.models.generateContent({ model, contents: HELLO });
    return { text: response.text, finish: response.candidates[0].finishReason };
  },
  async stream(model) {
    const pieces = [];
    let usage = null;
    for await (const chunk of await google.models.generateContentStream({ model, contents: STREAM })) {
      if (chunk.text) pieces.push(chunk.text);
      if (chunk.usageMetadata) usage = chunk.usageMetadata;
    }
    return { text: pieces.join(""), chunks: pieces.length, usage };
  },
  async tool(model) {
    const config = {
      tools: [
        {
          functionDeclarations: [
            {
              name: "get_weather",
              description: "Get the current weather in a city",
              parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] },
            },
          ],
        },
      ],
    };
    const contents = [{ role: "user", parts: [{ text: ASK }] }];
    const first = await google.models.generateContent({ model, contents, config });
    const calls = first.functionCalls ?? [];
    contents.push(first.candidates[0].content);
    contents.push({
      role: "user",
      parts: calls.map((call) => ({
        functionResponse: { id: call.id, name: call.name, response: { result: weather(call.args.city) } },
      })),
    });
    const final = await google.models.generateContent({ model, contents, config });
    return { text: final.text, calls: calls.map((call) => call.args.city) };
  },
  async count(model) {
    const counted = await google.models.countTokens({ model, contents: HELLO });
    return { tokens: counted.totalTokens };
  },
  async list() {
    const ids = [];
    for await (const info of await google.models.list()) ids.push(info.name);
    return { ids };
  },
};

const sdks = { anthropic: anthropicCases, google: googleCases };
await report(Object.entries(sdks).flatMap(([sdk, cases]) => spec.models.map((id) => [`${sdk}:${id}`, cases, id])));
