// SPDX-License-Identifier: Apache-2.0
// What the two npm runtime agents share: their flags, a paced request loop, and a log of their
// own request timings (the independent measure the tests compare the daemon's figures with).
import { appendFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

export function options() {
  const { values } = parseArgs({
    options: {
      model: { type: "string" },
      seconds: { type: "string", default: "600" },
      rate: { type: "string", default: "5" }, // requests started per second at most
      log: { type: "string" }, // "END_UNIX_MS DURATION_MS" per request
      ready: { type: "string" }, // a file to write "PID" into once the model is loaded
    },
  });
  if (!values.model) throw new Error("--model is required");
  return values;
}

// Runs `request` at most `rate` times a second for `seconds`, logging each one's duration.
export async function serve(opts, request) {
  if (opts.ready) writeFileSync(opts.ready, `${process.pid}\n`);
  const period = 1000 / Number(opts.rate);
  const until = Date.now() + Number(opts.seconds) * 1000;
  let n = 0;
  while (Date.now() < until) {
    const start = performance.now();
    await request();
    const took = performance.now() - start;
    n++;
    if (opts.log) appendFileSync(opts.log, `${Date.now()} ${took.toFixed(3)}\n`);
    if (took < period) await new Promise((resolve) => setTimeout(resolve, period - took));
  }
  console.log(`done ${n}`);
}
