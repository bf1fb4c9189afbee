/**
 * What one cap unit buys (docs/cost-bounds.md, "What one unit buys"): the requests that
 * define and test the unit, each counted (`countVerificationCost`) and verified on this
 * thread, the median of `--runs` (default 5), side by side in one run.
 *
 *   node --import tsx bench/cost-units.ts [--runs 5]
 */

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { countVerificationCost, unitsOf, weightOf } from "../src/service/cost.js";
import { verifyBundle } from "../src/verifier/bundle/verify-bundle.js";
import { parseJson } from "../src/verifier/json/parse.js";
import { isArray, isObject, type JsonValue } from "../src/verifier/json/value.js";
import {
  batchOfSize,
  distinctIssuersBundle,
  emptyObjectsBundle,
  generatedBundle,
} from "./fixtures.js";
import { edgePointBundle } from "./support/edge-point-bundle.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);
const MIB_BODY = 1_040_000;

function bundlesOf(body: JsonValue): JsonValue[] {
  const bundles = isObject(body) ? body.get("bundles") : undefined;
  return isArray(bundles) ? bundles : [body];
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Parse, count and verify `body` as the worker does; a fresh key cache is not forced. */
function measure(name: string, body: Uint8Array) {
  const samples: number[] = [];
  let counts = countVerificationCost(bundlesOf(parseJson(body)), body.length);
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const bundles = bundlesOf(parseJson(body));
    counts = countVerificationCost(bundles, body.length);
    for (const bundle of bundles) verifyBundle(bundle, { requireAnchor: false });
    samples.push(performance.now() - started);
  }
  return {
    request: name,
    ...counts,
    weight: weightOf(counts),
    units: unitsOf(counts),
    ms: Math.round(median(samples)),
  };
}

const happy = readFileSync(
  new URL("../../shared/corpus/vectors/02_happy_full.json", import.meta.url),
);
const rows = [
  measure("02_happy_full.json", happy),
  measure("single bundle, 100 receipts", generatedBundle(100)),
  measure("1 MiB batch of 50 real bundles", batchOfSize(MIB_BODY, 50)),
  measure("1 MiB bundle of {} receipts", emptyObjectsBundle(MIB_BODY)),
  measure("1 MiB bundle, distinct keys", distinctIssuersBundle(MIB_BODY)),
  measure("1 MiB edge-point bundle, distinct keys", edgePointBundle(MIB_BODY)),
];
console.log(`node ${process.version}, median of ${runs}`);
console.table(rows);
