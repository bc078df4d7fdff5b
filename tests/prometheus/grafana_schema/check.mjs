// SPDX-License-Identifier: Apache-2.0
// Type-checks Grafana dashboard JSON files against Grafana's published dashboard schema: each
// file becomes `const dashboard: Dashboard = <its JSON>` (the Dashboard type of @grafana/schema)
// and the TypeScript compiler checks it strictly, excess properties included, so a misspelt key,
// a wrong value type or a missing required field (schemaVersion, a panel's gridPos fields...) is
// an error naming the file and line.
//   node check.mjs OUT_DIR FILE.json...    exit 0 when every file checks, 1 otherwise
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
const [outDir, ...files] = process.argv.slice(2);
if (!outDir || files.length === 0) {
  console.error('usage: node check.mjs OUT_DIR FILE.json...');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
// JSON spells a string enum's values (ThresholdsMode "absolute"), TypeScript wants the enum
// member: Json<T> is T with every string enum replaced by the union of its values.
const JSON_OF = `type Json<T> = T extends string ? \`\${T}\` : T extends number ? number :
  T extends boolean ? boolean : T extends Array<infer U> ? Array<Json<U>> :
  T extends object ? { [K in keyof T]: Json<T[K]> } : T;`;
const sources = files.map((f) => {
  const ts_path = join(outDir, basename(f).replace(/\.json$/, '') + '.ts');
  const json = readFileSync(f, 'utf8');
  JSON.parse(json); // malformed JSON is an error before any type check
  writeFileSync(ts_path, `import type { Dashboard } from '@grafana/schema';\n${JSON_OF}\n` +
                         `export const dashboard: Json<Dashboard> = ${json};\n`);
  return ts_path;
});
const program = ts.createProgram(sources, {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  skipLibCheck: true,
  baseUrl: here,
  paths: { '@grafana/schema': ['node_modules/@grafana/schema/dist/types/index.d.ts'] },
});
const diags = ts.getPreEmitDiagnostics(program);
for (const d of diags) {
  const where = d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '';
  console.error(`${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}
if (diags.length) process.exit(1);
console.log(`${files.length} dashboard(s) match @grafana/schema's Dashboard type`);
