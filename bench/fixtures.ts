/**
 * The inputs every benchmark sends, generated here (not read from the corpus) so the harness
 * runs anywhere: realistic agent-task bundles, an anchored OpenTimestamps proof with its block
 * header, and settlements. Also the bundle's own Ed25519 signatures, for the crypto ceiling.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { didKeyToPublicKey } from "../src/verifier/crypto/did-key.js";
import { signerFromSeed } from "../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../src/verifier/json/canonical.js";
import { dumpCompact } from "../src/verifier/json/dump.js";
import { parseJson } from "../src/verifier/json/parse.js";
import { isArray, isObject, type JsonObject, member } from "../src/verifier/json/value.js";
import { BundleBuilder } from "../src/verifier/producer/index.js";
import { formatUtcSeconds } from "../src/verifier/timestamps.js";
import { headerWith, upgradedProof } from "./support/ots.js";

/**
 * A realistic task of `receiptCount` receipts (at least 2): a session pass, alternating
 * decision/execution receipts, a termination. `variant` changes the task id and the agent, so
 * distinct variants are distinct bundles with distinct digests.
 */
export function generatedBundle(receiptCount: number, variant = 0): Uint8Array {
  return agentTaskBundle(receiptCount, {
    agentSeed: `bench agent ${variant}`,
    taskId: `urn:uuid:bench-task-${variant}`,
    toolCallQuota: 1000,
  });
}

/** Who signs an `agentTaskBundle`, its task id, and the session pass's tool-call quota. */
export interface AgentTask {
  readonly agentSeed: string;
  readonly taskId: string;
  readonly toolCallQuota: number;
}

/** The task of `generatedBundle`, signed by the agent `task` names (the page's tests use it). */
export function agentTaskBundle(receiptCount: number, task: AgentTask): Uint8Array {
  const agent = signerFromSeed(createHash("sha256").update(task.agentSeed).digest());
  const builder = new BundleBuilder("continuity-receipt/0.4", task.taskId);
  const at = (i: number) => formatUtcSeconds(new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
  builder.append({
    type: "session.pass.created",
    signer: agent,
    issuedAt: at(0),
    body: {
      gate_id: "gate-1",
      mandala_class: "gate-lite",
      quotas: { tool_calls: task.toolCallQuota },
      expires_at: "2026-12-31T00:00:00Z",
      policy_version: "2026-01-01.1",
      mandate_ref: `sha256:${"ab".repeat(32)}`,
      agent_id: agent.did,
      spend_cap: { minor: 100000, currency: "USD" },
    },
  });
  for (let i = 1; i < receiptCount - 1; i++) {
    const decision = i % 2 === 1;
    builder.append({
      type: decision ? "task.decision" : "task.execution",
      signer: agent,
      issuedAt: at(i),
      body: decision
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
    issuedAt: at(receiptCount - 1),
    body: { reason: "completed", limits_at_stop: {}, remaining: {} },
  });
  return Buffer.from(dumpCompact(builder.build()));
}

/** `{"bundles":[…]}` of the given bundles, as the bytes a client sends. */
/**
 * `bundle` with every signature broken: the first base64url character of each `sig.value`
 * changed, so R differs in its top bits. R stays an ordinary point encoding and S stays
 * below L, so each check costs a full verification before it fails.
 */
export function withBadSignatures(bundle: Uint8Array): Buffer {
  const text = Buffer.from(bundle).toString("utf8");
  const broken = text.replace(/"value":"(.)/g, (_match, first: string) => {
    return `"value":"${first === "A" ? "B" : "A"}`;
  });
  if (broken === text) throw new Error("withBadSignatures: the bundle has no signature");
  return Buffer.from(broken, "utf8");
}

export function batchBody(bundles: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [Buffer.from('{"bundles":[')];
  bundles.forEach((bundle, index) => {
    if (index > 0) parts.push(Buffer.from(","));
    parts.push(Buffer.from(bundle));
  });
  parts.push(Buffer.from("]}"));
  return Buffer.concat(parts);
}

/**
 * A batch of `count` bundles whose body is about `bytes` long: each bundle gets as many
 * receipts as it takes to reach its share of the size.
 */
export function batchOfSize(bytes: number, count: number): Buffer {
  const perBundle = bytes / count;
  const oneReceipt = generatedBundle(3).length - generatedBundle(2).length;
  const receipts = Math.max(
    2,
    Math.round((perBundle - generatedBundle(2).length) / oneReceipt) + 2,
  );
  return batchBody(Array.from({ length: count }, (_, i) => generatedBundle(receipts, 1_000 + i)));
}

/** One Ed25519 signature of a bundle, as node:crypto verifies it (SPKI DER key). */
export interface RawSignature {
  /** The issuer's `did:key`, which the minimal verifier (ceiling.ts) looks the key up by. */
  issuerId: string;
  publicKeyDer: Buffer;
  message: Buffer;
  signature: Buffer;
}

const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Every receipt signature of `bundleBytes`, with the exact signed bytes (JCS without `sig`). */
export function signaturesOf(bundleBytes: Uint8Array): RawSignature[] {
  const bundle = parseJson(bundleBytes);
  const receipts = isObject(bundle) ? member(bundle, "receipts") : null;
  if (!isArray(receipts)) throw new Error("not a bundle");
  return receipts.filter(isObject).map((receipt: JsonObject) => {
    const issuer = member(receipt, "issuer") as JsonObject;
    const sig = member(receipt, "sig") as JsonObject;
    const issuerId = member(issuer, "id") as string;
    return {
      issuerId,
      publicKeyDer: Buffer.concat([SPKI_PREFIX, didKeyToPublicKey(issuerId)]),
      message: Buffer.from(canonicalBytes(receipt, "sig")),
      signature: Buffer.from(member(sig, "value") as string, "base64url"),
    };
  });
}

/** A `/verify-anchor` body whose proof is Bitcoin-attested and whose header matches: `verified`. */
export function anchorBody(): string {
  const digest = createHash("sha256").update("receiptd bench anchor").digest();
  const height = 840_000;
  const merkleRoot = createHash("sha256").update(digest).digest();
  return JSON.stringify({
    proof: upgradedProof(digest, height).toString("base64"),
    digest: `sha256:${digest.toString("hex")}`,
    headers: { [height]: headerWith(merkleRoot).toString("hex") },
  });
}

/** A settlement for `POST /payment-receipts`; `n` makes the transaction (and so the receipt) distinct. */
export function settlementBody(run: string, n: number): string {
  const tx = createHash("sha256").update(`bench settlement ${run} ${n}`).digest("hex");
  return JSON.stringify({
    tx: `0x${tx}`,
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/verify",
  });
}

/** The spec every hostile fixture names, so the bodies pass the version check. */
const HOSTILE_SPEC = "continuity-receipt/0.4";

/**
 * One legal bundle of about `bytes` whose receipts are all `{}`: the cheapest bytes to send
 * and, parsed, one object each. Over the 10,000-receipt limit, so the answer is a 200
 * UNTRUSTED `too_many_receipts`: the cost is the parse, not the verification.
 */
export function emptyObjectsBundle(bytes: number): Buffer {
  const head = `{"spec":"${HOSTILE_SPEC}","task_id":"x","receipts":[`;
  const count = Math.floor((bytes - head.length - 2) / 3);
  return Buffer.from(`${head}{}${",{}".repeat(count - 1)}]}`);
}

/** A bundle of `receipts` empty receipts, at the per-bundle limit: each receipt is ~5 errors. */
function amplifyingBundle(receipts: number): string {
  return `{"spec":"${HOSTILE_SPEC}","task_id":"x","receipts":[{}${",{}".repeat(receipts - 1)}]}`;
}

/** Bundles of 10,000 `{}` receipts that fit in about 1 MiB (issue 16: 34 of them). */
export const AMPLIFYING_BUNDLES = 34;
const AMPLIFYING_RECEIPTS = 10_000;

/** `{"bundles": [34 × 10,000 empty receipts]}`: 1 MiB that asks for ~1.7 million errors. */
export function amplificationBatch(): Buffer {
  const bundle = amplifyingBundle(AMPLIFYING_RECEIPTS);
  return Buffer.from(`{"bundles":[${Array(AMPLIFYING_BUNDLES).fill(bundle).join(",")}]}`);
}

/** The same bundles as one MCP (2025-03-26) JSON-RPC batch of `verify_bundle` calls. */
export function amplificationMcpBatch(): Buffer {
  const bundle = amplifyingBundle(AMPLIFYING_RECEIPTS);
  const calls = Array.from(
    { length: AMPLIFYING_BUNDLES },
    (_, id) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call",` +
      `"params":{"name":"verify_bundle","arguments":{"bundle":${bundle}}}}`,
  );
  return Buffer.from(`[${calls.join(",")}]`);
}

/**
 * A real bundle whose first receipt names its issuer and signing key as one `did:key:z…` long
 * enough to make the body `bytes` long: issue 22's did:key bomb (the quadratic decoding it
 * targeted took minutes on a 1 MiB one; now it is refused by its length).
 */
export function didKeyBombBundle(bytes: number): Buffer {
  const bundle = JSON.parse(Buffer.from(generatedBundle(6, 0)).toString("utf8")) as {
    receipts: { issuer: { id: string }; sig: { key: string } }[];
  };
  const first = bundle.receipts[0]!;
  const plain = JSON.stringify(bundle).length - first.issuer.id.length - first.sig.key.length;
  const digits = Math.floor((bytes - plain) / 2) - "did:key:z".length;
  const bomb = `did:key:z${"z".repeat(digits)}`;
  first.issuer.id = bomb;
  first.sig.key = bomb;
  return Buffer.from(JSON.stringify(bundle));
}

/**
 * One bundle of about `bytes` whose receipts are each issued under a distinct ordinary
 * did:key (their signatures no longer verify: the verdict is UNTRUSTED, a result): a key
 * import and a full check each. Issue 32's edge-point body, the same with every signature a
 * small-order R, is bench/support/edge-point-bundle.ts.
 */
export function distinctIssuersBundle(bytes: number): Buffer {
  type Receipts = { receipts: { issuer: { id: string }; sig: { key: string; value: string } }[] };
  const template = JSON.parse(Buffer.from(generatedBundle(3, 0)).toString("utf8")) as Receipts;
  const perReceipt = JSON.stringify(template.receipts[1]).length + 1;
  const count = Math.max(3, Math.floor(bytes / perReceipt));
  const bundle = JSON.parse(Buffer.from(generatedBundle(count, 0)).toString("utf8")) as Receipts;
  bundle.receipts.forEach((receipt, i) => {
    const did = signerFromSeed(createHash("sha256").update(`issuer ${i}`).digest()).did;
    receipt.issuer.id = did;
    receipt.sig.key = did;
  });
  return Buffer.from(JSON.stringify(bundle));
}

/**
 * `lines` bundles of six receipts, one a line, cycling through `distinct` of them (the bulk
 * scenarios' input: about 4.5 KB a line, 4.6 GB for a million), streamed to `path`.
 */
export async function writeBundleNdjson(path: string, lines: number, distinct = 64): Promise<void> {
  const bundles = Array.from({ length: distinct }, (_, at) =>
    Buffer.from(`${JSON.stringify(JSON.parse(Buffer.from(generatedBundle(6, at)).toString()))}\n`),
  );
  const out = createWriteStream(path);
  for (let at = 0; at < lines; at += 1) {
    if (!out.write(bundles[at % distinct] as Buffer)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}
