#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Test-only: validates the multi-document YAML on stdin (kubectl kustomize output) against the
// Kubernetes OpenAPI schemas, using the validators kubernetes-models generates from them
// (Kubernetes 1.27 API; PodMonitor from the Prometheus Operator's CRD schema). Each object must
// have an apiVersion/kind the schemas know and pass them: types, enums, required fields, formats.
// Prints one line per object and exits 1 on the first invalid or unknown one. --dump FILE writes
// the objects there as a JSON array (for the test's own checks). Works on node 18+.
'use strict';

const fs = require('fs');
const YAML = require('yaml');

function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z]+$/.test(kind)) {
    throw new Error(`no apiVersion/kind: ${apiVersion}/${kind}`);
  }
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const pkg = group === 'monitoring.coreos.com'
    ? `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`
    : `kubernetes-models/${group ? group + '/' : ''}${version}/${kind}`;
  let mod;
  try {
    mod = require(pkg);
  } catch (err) {
    throw new Error(`${apiVersion} ${kind}: not a kind the schemas know (${pkg})`);
  }
  if (!mod[kind]) throw new Error(`${apiVersion} ${kind}: ${pkg} has no model`);
  return mod[kind];
}

const dumpAt = process.argv.indexOf('--dump');
const dump = dumpAt > 0 ? process.argv[dumpAt + 1] : null;
const objects = [];
const docs = YAML.parseAllDocuments(fs.readFileSync(0, 'utf8'));
let n = 0;
for (const doc of docs) {
  if (doc.errors.length) {
    console.error(`YAML error: ${doc.errors[0].message}`);
    process.exit(1);
  }
  const obj = doc.toJS();
  if (obj == null) continue;
  const label = `${obj.kind}/${obj.metadata && obj.metadata.name}`;
  try {
    const Model = modelFor(obj.apiVersion, obj.kind);
    new Model(obj).validate();
  } catch (err) {
    console.error(`INVALID ${label}: ${err.message}`);
    process.exit(1);
  }
  console.log(`valid ${obj.apiVersion} ${label}`);
  objects.push(obj);
  n++;
}
if (n === 0) {
  console.error('no objects on stdin');
  process.exit(1);
}
if (dump) fs.writeFileSync(dump, JSON.stringify(objects));
console.log(`${n} objects valid`);
