// The Vercel AI SDK against the gateway: for each provider package (OpenAI in Responses mode,
// its default, and in chat mode; Anthropic; Google) and each model of the spec, a text call,
// a stream and a tool round trip (generateText runs the tool and sends its result back).
// Spec (CLIENT_SPEC, JSON): base_url, key, models, nonce. Prints one JSON object:
// {"<provider>:<model>": {"text": {...}, "stream": {...}, "tool": {...}}}, a case that threw
// as {"error": "..."}.
import { generateText, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";

import { report } from "./report.mjs";

const spec = JSON.parse(process.env.CLIENT_SPEC);
const openai = createOpenAI({ baseURL: `${spec.base_url}/v1`, apiKey: spec.key });
const providers = {
  "openai-responses": (id) => openai(id),
  "openai-chat": (id) => openai.chat(id),
  anthropic: (id) => createAnthropic({ baseURL: `${spec.base_url}/v1`, apiKey: spec.key })(id),
  google: (id) => createGoogleGenerativeAI({ baseURL: `${spec.base_url}/v1beta`, apiKey: spec.key })(id),
};

async function text(model) {
  const result = await generateText({ model, prompt: "Hello there", maxRetries: 0 });
  return { text: result.text };
}

async function stream(model) {
  let failure = null;
  const result = streamText({
    model,
    prompt: "Stream a short reply please",
    maxRetries: 0,
    onError: ({ error }) => {
      failure = error;
    },
  });
  const chunks = [];
  for await (const delta of result.textStream) chunks.push(delta);
  if (failure) throw failure;
  return { text: chunks.join(""), chunks: chunks.length };
}

async function toolRoundTrip(model) {
  const calls = [];
  const getWeather = tool({
    description: "Get the current weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      calls.push(city);
      return `${spec.nonce} in ${city}`;
    },
  });
  const result = await generateText({
    model,
    prompt: "What is the weather in Paris? Use get_weather.",
    tools: { get_weather: getWeather },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  return { text: result.text, calls, steps: result.steps.length };
}

const cases = { text, stream, tool: toolRoundTrip };
await report(
  Object.entries(providers).flatMap(([provider, make]) => spec.models.map((id) => [`${provider}:${id}`, cases, make(id)])),
);
