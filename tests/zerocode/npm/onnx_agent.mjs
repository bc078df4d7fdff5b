// SPDX-License-Identifier: Apache-2.0
// An agent on onnxruntime-node (ONNX Runtime's release build), written without tailcause: each
// request is one session run of write_onnx.py's model. Flags: agent_common.mjs.
import * as ort from "onnxruntime-node";
import { options, serve } from "./agent_common.mjs";

const opts = options();
const session = await ort.InferenceSession.create(opts.model, {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
});
const [rows, width] = [256, 512]; // write_onnx.py's defaults
const x = new ort.Tensor("float32", Float32Array.from({ length: rows * width }, (_, i) => (i % 7) / 7), [rows, width]);
await serve(opts, async () => {
  await session.run({ x });
});
