/**
 * Large bundles for the verification page's tests and bench (issue 25), generated rather than
 * stored: the corpus's full happy bundle with its receipts repeated (what the issue tried, and
 * what made every error multiply), to 2,000 or up to the page's 8 MiB limit, and a signed task
 * of unique receipts.
 */
import { readFileSync } from "node:fs";
import { parseJson } from "../../src/verifier/json/parse.js";
import { agentTaskBundle } from "../fixtures.js";

/**
 * The corpus's full happy bundle, from ../shared/corpus beside the checkout (where
 * test/support/corpus.ts reads it too; bench/ may not import test/). Parsed by the verifier's
 * parser, as tests read corpus values, so the repeats are the same bytes either way.
 */
const HAPPY_FULL = new URL("../../../shared/corpus/vectors/02_happy_full.json", import.meta.url);

/** The bundle limit the page and the CLI share (`bundle_too_large` above it). */
export const BUNDLE_LIMIT_BYTES = 8 * 1024 * 1024;

/** `vectors/02_happy_full.json` with its 6 receipts repeated, in order, to `count`. */
export function repeatedReceiptsBundle(count: number): Uint8Array {
  const bundle = JSON.parse(JSON.stringify(parseJson(readFileSync(HAPPY_FULL)), plain)) as {
    receipts: unknown[];
  };
  const receipts = bundle.receipts;
  bundle.receipts = Array.from({ length: count }, (_, i) => receipts[i % receipts.length]);
  return Buffer.from(JSON.stringify(bundle));
}

function plain(_key: string, value: unknown): unknown {
  if (value instanceof Map) return Object.fromEntries(value);
  return typeof value === "bigint" ? Number(value) : value;
}

/**
 * A signed task of `count` receipts with unique ids (a session pass, decisions and executions,
 * a termination). TRUSTED when verified.
 */
export function uniqueReceiptsBundle(count: number): Uint8Array {
  return agentTaskBundle(count, {
    agentSeed: "receiptd page large bundle",
    taskId: "urn:uuid:page-large-task",
    toolCallQuota: count,
  });
}

/**
 * The repeated happy bundle grown to just under the 8 MiB limit (about 9,600 receipts): the
 * most findings a bundle the page accepts can produce (each repeat breaks the chain).
 */
export function nearLimitBundle(): Uint8Array {
  const perReceipt = repeatedReceiptsBundle(1200).length / 1200;
  let count = Math.min(10_000, Math.floor((BUNDLE_LIMIT_BYTES - 4096) / perReceipt));
  let bytes = repeatedReceiptsBundle(count);
  while (bytes.length > BUNDLE_LIMIT_BYTES) bytes = repeatedReceiptsBundle(--count);
  return bytes;
}
