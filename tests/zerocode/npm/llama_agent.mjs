// SPDX-License-Identifier: Apache-2.0
// An agent on node-llama-cpp's prebuilt llama.cpp (CPU build), written without tailcause: each
// request completes a short prompt with 24 tokens. Flags: agent_common.mjs.
import { getLlama, LlamaCompletion } from "node-llama-cpp";
import { options, serve } from "./agent_common.mjs";

const opts = options();
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: opts.model });
const context = await model.createContext({ contextSize: 256, threads: 1 });
const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
await serve(opts, async () => {
  await completion.generateCompletion("tell me about the tail latency", { maxTokens: 24 });
});
