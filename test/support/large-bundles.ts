/**
 * Large bundles for the verification page's tests and bench (issue 25), generated rather than
 * stored: the corpus's full happy bundle with its receipts repeated (what the issue tried, and
 * what made every error multiply), to 2,000 or up to the page's 8 MiB limit, and a signed task
 * of unique receipts.
 */
import { createHash } from "node:crypto";
import { signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { BundleBuilder } from "../../src/verifier/producer/index.js";
import { formatUtcSeconds } from "../../src/verifier/timestamps.js";
import { corpusValue } from "./corpus.js";

/** The bundle limit the page and the CLI share (`bundle_too_large` above it). */
export const BUNDLE_LIMIT_BYTES = 8 * 1024 * 1024;

/** `vectors/02_happy_full.json` with its 6 receipts repeated, in order, to `count`. */
export function repeatedReceiptsBundle(count: number): Uint8Array {
  const bundle = JSON.parse(JSON.stringify(corpusValue("vectors/02_happy_full.json"), plain)) as {
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
  const agent = signerFromSeed(createHash("sha256").update("receiptd page large bundle").digest());
  const builder = new BundleBuilder("continuity-receipt/0.4", "urn:uuid:page-large-task");
  const at = (i: number) => formatUtcSeconds(new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
  builder.append({
    type: "session.pass.created",
    signer: agent,
    issuedAt: at(0),
    body: {
      gate_id: "gate-1",
      mandala_class: "gate-lite",
      quotas: { tool_calls: count },
      expires_at: "2026-12-31T00:00:00Z",
      policy_version: "2026-01-01.1",
      mandate_ref: `sha256:${"ab".repeat(32)}`,
      agent_id: agent.did,
      spend_cap: { minor: 100000, currency: "USD" },
    },
  });
  for (let i = 1; i < count - 1; i++) {
    builder.append({
      type: i % 2 === 1 ? "task.decision" : "task.execution",
      signer: agent,
      issuedAt: at(i),
      body:
        i % 2 === 1
          ? {
              action: "tool.call",
              action_args_hash: `sha256:${"cd".repeat(32)}`,
              model: "model-x",
              input_provenance: { observed_sources_hash: `sha256:${"ef".repeat(32)}` },
              decision: "allow",
              policy_version: "2026-01-01.1",
            }
          : {
              tool_calls: [{ name: "search", args_hash: `sha256:${"01".repeat(32)}` }],
              egress: [],
              resources: { cpu_ms: 120 },
              sandbox_class: "landlock",
            },
    });
  }
  builder.append({
    type: "task.termination",
    signer: agent,
    issuedAt: at(count - 1),
    body: { reason: "completed", limits_at_stop: {}, remaining: {} },
  });
  return Buffer.from(dumpCompact(builder.build()));
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
