// The Vercel AI SDK's image and speech calls against the gateway. Images: `openai.image(id)`
// (OpenAI's image API) and `google.image(id)` (Gemini's generateContent with IMAGE output; the
// SDK takes only ids that start with "gemini-"), each generating two images and editing the
// spec's picture. Speech: `openai.speech(id)` and `google.speech(id)` speaking one sentence.
// Transcription: `openai.transcription(id)` writing down the spec's audio.
// Spec (CLIENT_SPEC, JSON): base_url, key, images, speech and transcription ([[provider, model]]
// each), picture (base64 PNG), audio (base64 WAV). Prints one JSON object: {"<kind>:<provider>:<model>": {"<case>": {...}}},
// a case that threw as {"error": "..."}.
import { experimental_generateSpeech as generateSpeech, generateImage, transcribe } from "ai";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";

import { report } from "./report.mjs";

const spec = JSON.parse(process.env.CLIENT_SPEC);
const openai = createOpenAI({ baseURL: `${spec.base_url}/v1`, apiKey: spec.key });
const google = createGoogleGenerativeAI({ baseURL: `${spec.base_url}/v1beta`, apiKey: spec.key });
const imageModels = { openai: (id) => openai.image(id), google: (id) => google.image(id) };
const speechModels = { openai: (id) => openai.speech(id), google: (id) => google.speech(id) };
// What each provider's image models take for a landscape picture.
const shape = { openai: { size: "1536x1024" }, google: { aspectRatio: "3:2" } };

function shown(result) {
  return {
    images: result.images.map((image) => ({ mediaType: image.mediaType, base64: image.base64 })),
    warnings: result.warnings,
    usage: result.usage,
  };
}

const imageCases = (provider) => ({
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

const speechCases = {
  speak: async (model) => {
    const result = await generateSpeech({ model, text: "Hello from the gateway", maxRetries: 0 });
    return { mediaType: result.audio.mediaType, base64: result.audio.base64, warnings: result.warnings };
  },
};

const transcriptionCases = {
  transcribe: async (model) => {
    const result = await transcribe({ model, audio: Buffer.from(spec.audio, "base64"), maxRetries: 0 });
    return { text: result.text, warnings: result.warnings };
  },
};

await report([
  ...spec.images.map(([provider, id]) => [`image:${provider}:${id}`, imageCases(provider), imageModels[provider](id)]),
  ...spec.speech.map(([provider, id]) => [`speech:${provider}:${id}`, speechCases, speechModels[provider](id)]),
  ...spec.transcription.map(([provider, id]) => [`transcription:${provider}:${id}`, transcriptionCases, openai.transcription(id)]),
]);
