// SPDX-License-Identifier: Apache-2.0
// Drives Debian's headless Chromium over the DevTools protocol (a pipe, no packages): loads the daemon's page, waits for the glitch table and the heatmap, clicks the
// busiest heatmap cell with a real mouse event, takes a screenshot and measures it (decoded by
// the browser itself). Prints one JSON object of findings; the shell test judges them.
// usage: node check_page.js URL SCREENSHOT.png PROFILE_DIR
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");

const [url, shotPath, profile] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The DevTools protocol over a pipe (fd 3 to Chromium, fd 4 back; messages end with NUL):
// no WebSocket needed, so any node (Debian's 18 too) will do.
const chrome = spawn(process.env.CHROMIUM || "chromium", [
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--remote-debugging-pipe",
  `--user-data-dir=${profile}`, "--window-size=1400,1800", "about:blank"],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let chromeErr = "";
chrome.stderr.on("data", (d) => { chromeErr += d; });
function fail(msg) {
  console.error("check_page: " + msg + "\n" + chromeErr.slice(-2000));
  chrome.kill("SIGKILL");
  process.exit(1);
}
chrome.on("exit", (code) => fail("chromium exited with " + code));

async function main() {
  let next = 1, pending = Buffer.alloc(0), session;
  const waiting = new Map();
  chrome.stdio[4].on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (let end; (end = pending.indexOf(0)) >= 0;) {
      const msg = JSON.parse(pending.subarray(0, end).toString("utf8"));
      pending = pending.subarray(end + 1);
      if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
    }
  });
  const send = (method, params = {}, sessionId = session) => new Promise((res) => {
    const id = next++;
    waiting.set(id, res);
    chrome.stdio[3].write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  });
  const target = await send("Target.createTarget", { url: "about:blank" }, null);
  if (target.error) fail("createTarget: " + JSON.stringify(target.error));
  const attached = await send("Target.attachToTarget", { targetId: target.result.targetId, flatten: true }, null);
  if (attached.error) fail("attachToTarget: " + JSON.stringify(attached.error));
  session = attached.result.sessionId;
  const evaluate = async (expr) => {
    const r = await send("Runtime.evaluate", { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.error || r.result.exceptionDetails) fail("evaluate " + expr + ": " + JSON.stringify(r.error || r.result.exceptionDetails));
    return r.result.result.value;
  };
  const until = async (what, expr, ms = 30000) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await evaluate(expr);
      if (v) return v;
      if (Date.now() > end) fail("timed out waiting for " + what);
      await sleep(250);
    }
  };

  await send("Page.enable");
  await send("Page.navigate", { url });
  const out = {};
  // The glitch table, filtered to tenant ta's generation stages with its own selects, shows
  // only those, each with a verdict.
  await until("tenant and stage options", `!!document.querySelector('#f-tenant option[value="ta"]') && !!document.querySelector('#f-stage option[value="generation"]')`);
  await evaluate(`(() => { document.querySelector('#f-tenant').value = 'ta'; document.querySelector('#f-stage').value = 'generation'; return drawGlitches().then(() => true); })()`);
  out.verdict = await until("ta's generation glitches with verdicts", `(() => {
    const rows = [...document.querySelectorAll('#glitches tr.g')];
    if (!rows.length || !rows.every(r => r.cells[1].textContent === 'ta' && r.cells[2].textContent === 'generation')) return '';
    return rows[0].querySelector('td.verdict').textContent; })()`);
  out.filtered_rows = await evaluate(`document.querySelectorAll('#glitches tr.g').length`);
  out.heatmap_cells = await until("heatmap cells", `document.querySelectorAll('#heatmap rect.cell').length`);
  out.bar_rects = await evaluate(`document.querySelectorAll('#bars svg rect').length`);
  out.stages_listed = await evaluate(`[...document.querySelectorAll('#bars .row b')].map(b => b.textContent)`);
  out.tcp_cells = await evaluate(`document.querySelectorAll('#tcp rect.cell').length`);
  out.layer_cells = await evaluate(`document.querySelectorAll('#layers rect.cell').length`);
  out.cache_rows = await evaluate(`document.querySelectorAll('#caches tr').length`);
  out.contention_text = await evaluate(`document.querySelector('#contention').textContent`);
  out.heatmap_stage = await evaluate(`document.querySelector('#hm-stage').value`);

  // A real click (mouse events through the input pipeline) on the busiest cell of the slowest
  // latency bucket: the throttled tenant's glitching stages.
  const rect = await evaluate(`(() => {
    const cells = [...document.querySelectorAll('#heatmap rect.cell')];
    cells.sort((a, b) => (b.dataset.y - a.dataset.y) || (b.dataset.v - a.dataset.v));
    cells[0].scrollIntoView({block: 'center'});
    const r = cells[0].getBoundingClientRect();
    return {x: r.x + r.width / 2, y: r.y + r.height / 2, v: +cells[0].dataset.v};
  })()`);
  out.clicked_cell_count = rect.v;
  for (const type of ["mouseMoved", "mousePressed", "mouseReleased"])
    await send("Input.dispatchMouseEvent", { type, x: rect.x, y: rect.y, button: "left", clickCount: 1 });
  out.cell_glitches_heading = await until("the clicked cell's glitch list",
    `(() => { const h = document.querySelector('#cell-glitches h2'); return h ? h.textContent : ''; })()`);
  out.cell_glitch_rows = await evaluate(`document.querySelectorAll('#cell-glitches tr.g').length`);
  out.cell_glitch_verdict = await evaluate(`(() => { const v = document.querySelector('#cell-glitches td.verdict'); return v ? v.textContent : ''; })()`);

  // Opening a glitch row shows its stages and components.
  // (The table is rebuilt every 5 s, which closes an open row: try again then.)
  const detailExpr = `[...document.querySelectorAll('#glitches tr.detail .stage-detail')].map(d => d.textContent).join(' | ')`;
  for (let attempt = 0; attempt < 5 && !out.detail; ++attempt) {
    await evaluate(`document.querySelector('#glitches tr.g').click()`);
    for (let i = 0; i < 12 && !out.detail; ++i) { await sleep(250); out.detail = await evaluate(detailExpr); }
  }
  if (!out.detail) fail("a glitch row did not open its stages");

  const shot = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: false });
  fs.writeFileSync(shotPath, Buffer.from(shot.result.data, "base64"));
  // The browser decodes its own screenshot: distinct colours and the share of non-white pixels.
  const stats = await evaluate(`new Promise((res) => {
    const img = new Image();
    img.onload = () => {
      const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
      const g = c.getContext('2d'); g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      const colours = new Set(); let ink = 0;
      for (let i = 0; i < d.length; i += 4) {
        colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        if (d[i] + d[i + 1] + d[i + 2] < 700) ink++;
      }
      res({width: c.width, height: c.height, colours: colours.size, ink_share: ink / (d.length / 4)});
    };
    img.onerror = () => res({error: 'undecodable'});
    img.src = 'data:image/png;base64,${shot.result.data}';
  })`);
  out.screenshot = stats;
  console.log(JSON.stringify(out));
  chrome.removeAllListeners("exit");
  chrome.kill("SIGTERM");
  process.exit(0);
}
main().catch((e) => fail(String(e && e.stack || e)));
