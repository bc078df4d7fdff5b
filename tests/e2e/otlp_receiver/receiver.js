#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// A test-only OTLP/HTTP trace receiver. It decodes each POST body with the OpenTelemetry
// project's own OTLP definitions -- the protobufjs module generated from opentelemetry-proto
// that @opentelemetry/otlp-transformer ships (build/src/generated/root.js) -- not with
// tailcause's schema, and appends one JSON line per span to --out:
//   {"trace_id","span_id","parent_span_id" (hex, "" for a root),"name","kind" ("SPAN_KIND_SERVER"),
//    "start_time_unix_nano","end_time_unix_nano" (decimal strings),"attributes" {key: value},
//    "status" {"code","message"},"events" [{name,time_unix_nano,attributes}],
//    "resource" {key: value},"scope" {"name","version"},"request" (POST number, from 1)}
// A gzip body (Content-Encoding: gzip) is inflated first; --requests records the encoding and
// both sizes.
// Usage: node receiver.js --out spans.jsonl [--port 0] [--host 127.0.0.1] [--ready port.txt]
//        [--requests requests.jsonl] [--fail-first N] [--fail-status 503] [--retry-after S]
// --ready: the port is written there once listening (use --port 0 for any free port).
// --fail-first N: answer the first N POSTs with --fail-status (and Retry-After when given),
// to exercise a sender's retries; their bodies are decoded but not written to --out.
// Works on node 18 (Debian 12) and later. SIGTERM/SIGINT: close and exit 0.
'use strict';

const fs = require('fs');
const http = require('http');
const zlib = require('zlib');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');

const { ExportTraceServiceRequest, ExportTraceServiceResponse } =
  root.opentelemetry.proto.collector.trace.v1;

function parseArgs(argv) {
  const opts = { port: 0, host: '127.0.0.1', failFirst: 0, failStatus: 503 };
  const names = {
    '--port': 'port', '--host': 'host', '--out': 'out', '--ready': 'ready',
    '--requests': 'requests', '--fail-first': 'failFirst', '--fail-status': 'failStatus',
    '--retry-after': 'retryAfter',
  };
  for (let i = 2; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    opts[key] = argv[i + 1];
  }
  if (!opts.out) throw new Error('--out FILE is required');
  for (const k of ['port', 'failFirst', 'failStatus']) opts[k] = Number(opts[k]);
  return opts;
}

const hex = (b64) => Buffer.from(b64 || '', 'base64').toString('hex');

// An AnyValue as plain JSON: integers as numbers when exact, else as decimal strings.
function anyValue(v) {
  if (!v) return null;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : String(v.intValue);
  }
  if (v.doubleValue != null) return v.doubleValue;
  if (v.bytesValue != null) return hex(v.bytesValue);
  if (v.arrayValue) return (v.arrayValue.values || []).map(anyValue);
  if (v.kvlistValue) return flatten(v.kvlistValue.values);
  return null;
}

function flatten(keyValues) {
  const out = {};
  for (const kv of keyValues || []) out[kv.key] = anyValue(kv.value);
  return out;
}

// The decoded request as span lines.
function spanLines(body, requestNumber) {
  const message = ExportTraceServiceRequest.decode(body);
  const req = ExportTraceServiceRequest.toObject(message, {
    longs: String, enums: String, bytes: String, defaults: false,
  });
  const lines = [];
  for (const rs of req.resourceSpans || []) {
    const resource = flatten(rs.resource && rs.resource.attributes);
    for (const ss of rs.scopeSpans || []) {
      const scope = { name: (ss.scope && ss.scope.name) || '', version: (ss.scope && ss.scope.version) || '' };
      for (const s of ss.spans || []) {
        lines.push(JSON.stringify({
          trace_id: hex(s.traceId),
          span_id: hex(s.spanId),
          parent_span_id: hex(s.parentSpanId),
          name: s.name || '',
          kind: s.kind || 'SPAN_KIND_UNSPECIFIED',
          start_time_unix_nano: String(s.startTimeUnixNano || '0'),
          end_time_unix_nano: String(s.endTimeUnixNano || '0'),
          attributes: flatten(s.attributes),
          status: {
            code: (s.status && s.status.code) || 'STATUS_CODE_UNSET',
            message: (s.status && s.status.message) || '',
          },
          events: (s.events || []).map((e) => ({
            name: e.name || '',
            time_unix_nano: String(e.timeUnixNano || '0'),
            attributes: flatten(e.attributes),
          })),
          resource,
          scope,
          request: requestNumber,
        }));
      }
    }
  }
  return lines;
}

function main() {
  const opts = parseArgs(process.argv);
  fs.writeFileSync(opts.out, '');
  let posts = 0;
  const logRequest = (entry) => {
    if (opts.requests) fs.appendFileSync(opts.requests, JSON.stringify(entry) + '\n');
  };

  const server = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const number = ++posts;
      let body = Buffer.concat(chunks);
      const entry = {
        request: number, path: req.url, content_type: req.headers['content-type'] || '',
        content_encoding: req.headers['content-encoding'] || '',
        headers: req.headers, bytes: body.length,
      };
      const reply = (status, extraHeaders) => {
        entry.status = status;
        logRequest(entry);
        const payload = status === 200
          ? Buffer.from(ExportTraceServiceResponse.encode(ExportTraceServiceResponse.create({})).finish())
          : Buffer.alloc(0);
        res.writeHead(status, { 'Content-Type': 'application/x-protobuf', ...extraHeaders });
        res.end(payload);
      };
      if (entry.content_type.split(';')[0].trim() !== 'application/x-protobuf') {
        reply(415, {});
        return;
      }
      let lines;
      try {
        // Content-Encoding: gzip (OTLP/HTTP's one compression), inflated by node's zlib.
        if (entry.content_encoding === 'gzip') {
          body = zlib.gunzipSync(body);
          entry.inflated_bytes = body.length;
        } else if (entry.content_encoding) {
          throw new Error(`unsupported Content-Encoding ${entry.content_encoding}`);
        }
        lines = spanLines(body, number);
      } catch (err) {
        entry.error = String(err && err.message);
        reply(400, {});
        return;
      }
      entry.spans = lines.length;
      if (number <= opts.failFirst) {
        reply(opts.failStatus, opts.retryAfter != null ? { 'Retry-After': String(opts.retryAfter) } : {});
        return;
      }
      if (lines.length) fs.appendFileSync(opts.out, lines.join('\n') + '\n');
      reply(200, {});
    });
  });

  server.listen(opts.port, opts.host, () => {
    const port = server.address().port;
    if (opts.ready) {
      fs.writeFileSync(opts.ready + '.tmp', `${port}\n`);
      fs.renameSync(opts.ready + '.tmp', opts.ready);  // readers never see a half-written file
    }
    process.stderr.write(`otlp receiver listening on ${opts.host}:${port}\n`);
  });
  // Span lines are written synchronously, so nothing is pending: close and leave (idle
  // keep-alive connections would otherwise hold close() open on node 18).
  const stop = () => {
    server.close();
    if (server.closeAllConnections) server.closeAllConnections();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
