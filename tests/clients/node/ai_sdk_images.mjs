// The Vercel AI SDK's generateImage against the gateway: `openai.image(id)` (OpenAI's image API)
// and `google.image(id)` (Gemini's generateContent with IMAGE output; the SDK takes only ids
// that start with "gemini-"), each generating two images and editing the spec's picture.
// Spec (CLIENT_SPEC, JSON): base_url, key, entries [[provider, model]], picture (base64 PNG).
// Prints one JSON object: {"<provider>:<model>": {"generate": {...}, "edit": {...}}}, a case
// that threw as {"error": "..."}.
import { generateImage } from "ai";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";

import { report } from "./report.mjs";

const spec = JSON.parse(process.env.CLIENT_SPEC);
const openai = createOpenAI({ baseURL: `${spec.base_url}/v1`, apiKey: spec.key });
const google = createGoogleGenerativeAI({ baseURL: `${spec.base_url}/v1beta`, apiKey: spec.key });
const models = { openai: (id) => openai.image(id), google: (id) => google.image(id) };
// What each provider's models take for a landscape picture.
const shape = { openai: { size: "1536x1024" }, google: { aspectRatio: "3:2" } };

function shown(result) {
  return {
    images: result.images.map((image) => ({ mediaType: image.mediaType, base64: image.base64 })),
    warnings: result.warnings,
    usage: result.usage,
  };
}

const cases = (provider) => ({
  generate: async (model) =>
    shown(await generateImage({ model, prompt: "a red fox", n: 2, maxRetries: 0, ...shape[provider] })),
  edit: async (model) =>
    shown(
      await generateImage({
        model,
        prompt: { text: "make it blue", images: [`data:image/png;base64,${spec.picture}`] },
        maxRetries: 0,
      }),
    ),
});

await report(spec.entries.map(([provider, id]) => [`${provider}:${id}`, cases(provider), models[provider](id)]));
