/**
 * The benchmark scenarios: what each one sends, what answer counts as a success, how many
 * items and Ed25519 verifications one request carries, and the goal it is held to. Every
 * scenario talks only the public HTTP API, so it runs against any deployment of it.
 */
import { randomBytes } from "node:crypto";
import {
  AMPLIFYING_BUNDLES,
  amplificationBatch,
  amplificationMcpBatch,
  anchorBody,
  batchBody,
  batchOfSize,
  didKeyBombBundle,
  emptyObjectsBundle,
  generatedBundle,
  settlementBody,
  withBadSignatures,
} from "./fixtures.js";
import type { RequestSpec } from "./load.js";
import type { GoalCheck, ScenarioResult } from "./types.js";

/** What a scenario needs to know about the deployment it drives. */
export interface Deployment {
  label: string;
  origin: string;
  /** An API key with a cap high enough not to shape the run (`x-svc-key`). */
  apiKey?: string;
  /** The internal token (`POST /payment-receipts`); without it settlement ingestion is skipped. */
  internalToken?: string;
  mode: "embedded" | "distributed";
}

export interface Scenario {
  id: string;
  title: string;
  unit: string;
  itemsPerRequest: number;
  /** Ed25519 verifications one request costs the service (receipt signing is not counted). */
  verificationsPerRequest: number;
  connections: number;
  /** Makes the scenario's inputs on the deployment (e.g. primes the cache); a string skips it. */
  prepare?(deployment: Deployment): Promise<string | undefined>;
  request(n: number, deployment: Deployment): RequestSpec;
  accept(status: number, body: string, spec: RequestSpec): boolean;
  goal?(result: ScenarioResult, deployment: Deployment): GoalCheck | undefined;
  /** Also run against the floor server (floor-server.ts): a plain `POST /verify` it can answer. */
  floor?: boolean;
}

const BUNDLE_RECEIPTS = 6;
const BATCH_SIZE = 50;
const DISTINCT_BUNDLES = 64;
const DISTINCT_BATCHES = 8;
/** Just under the default body limit (`MAX_BODY_BYTES`, 1 MiB). */
const LARGE_BODY_BYTES = 1_040_000;

const JSON_TYPE = { "content-type": "application/json" };

function keyed(deployment: Deployment): Record<string, string> {
  return deployment.apiKey === undefined
    ? JSON_TYPE
    : { ...JSON_TYPE, "x-svc-key": deployment.apiKey };
}

const trusted = (status: number, body: string) =>
  status === 200 && body.includes('"verdict":"TRUSTED"');

/** A batch answer of `count` results, none of them anything but TRUSTED. */
const allTrusted = (count: number) => (status: number, body: string) =>
  status === 200 &&
  body.endsWith(`"count":${count},"service":"continuity-receipt-verify"}`) &&
  !/"verdict":"(?!TRUSTED)/.test(body);

const sixReceiptBundles = Array.from({ length: DISTINCT_BUNDLES }, (_, i) =>
  Buffer.from(generatedBundle(BUNDLE_RECEIPTS, i)),
);
const batches = Array.from({ length: DISTINCT_BATCHES }, (_, b) =>
  batchBody(
    Array.from({ length: BATCH_SIZE }, (_, i) =>
      generatedBundle(BUNDLE_RECEIPTS, DISTINCT_BUNDLES + b * BATCH_SIZE + i),
    ),
  ),
);
const badSignatureBatches = Array.from({ length: DISTINCT_BATCHES }, (_, b) =>
  batchBody(
    Array.from({ length: BATCH_SIZE }, (_, i) =>
      withBadSignatures(generatedBundle(BUNDLE_RECEIPTS, DISTINCT_BUNDLES + b * BATCH_SIZE + i)),
    ),
  ),
);
let largeBatch: Buffer | undefined;
let emptyObjects: Buffer | undefined;
let amplifying: Buffer | undefined;
let amplifyingMcp: Buffer | undefined;
const runId = randomBytes(6).toString("hex");

/** The single bundles the verification scenarios send in turn (the minimal verifier's input). */
export const verificationBundles: readonly Uint8Array[] = sixReceiptBundles;

/** The signatures of the bundle every verification scenario sends (for the ceiling). */
export const benchBundle = sixReceiptBundles[0]!;

const verifySingle = (deployment: Deployment, n: number, query = ""): RequestSpec => ({
  method: "POST",
  path: `/verify${query}`,
  headers: keyed(deployment),
  body: sixReceiptBundles[n % DISTINCT_BUNDLES]!,
});

const verifyBatch = (deployment: Deployment, n: number, query = ""): RequestSpec => ({
  method: "POST",
  path: `/verify${query}`,
  headers: keyed(deployment),
  body: batches[n % DISTINCT_BATCHES]!,
});

/** `{receipt, bundle}` for `/verify-receipt`, from the deployment's own `?receipt=1` answer. */
const receiptChecks = new Map<string, string>();

async function prepareReceiptCheck(deployment: Deployment): Promise<string | undefined> {
  const response = await fetch(`${deployment.origin}/verify?receipt=1`, {
    method: "POST",
    headers: keyed(deployment),
    body: benchBundle,
  });
  const answer = (await response.json()) as { verification_receipt?: unknown };
  if (!response.ok || answer.verification_receipt === undefined) {
    return `POST /verify?receipt=1 gave ${response.status} without a verification receipt`;
  }
  receiptChecks.set(
    deployment.origin,
    `{"receipt":${JSON.stringify(answer.verification_receipt)},"bundle":${benchBundle.toString("utf8")}}`,
  );
  return undefined;
}

const ANCHOR_BODY = anchorBody();

const atLeast = (
  description: string,
  holds: (result: ScenarioResult) => boolean,
): ((result: ScenarioResult) => GoalCheck) => {
  return (result) => ({ description, met: result.errors === 0 && holds(result) });
};

const singleBundle: Scenario = {
  id: "single",
  title: "single 6-receipt bundle",
  unit: "bundles",
  itemsPerRequest: 1,
  verificationsPerRequest: BUNDLE_RECEIPTS,
  connections: 16,
  request: (n, deployment) => verifySingle(deployment, n),
  accept: trusted,
  floor: true,
  // Issue 23's goal, of libsodium's ceiling (issue 15's was ≥ 75% of OpenSSL's, about half).
  goal: atLeast(
    "≥ 50% of ceiling, p99 ≤ 50 ms",
    (r) => (r.ceilingRatio ?? 0) >= 0.5 && r.latencyMs.p99 <= 50,
  ),
};

const batch50: Scenario = {
  id: "batch-50",
  title: "50-bundle batch",
  unit: "bundles",
  itemsPerRequest: BATCH_SIZE,
  verificationsPerRequest: BATCH_SIZE * BUNDLE_RECEIPTS,
  connections: 4,
  request: (n, deployment) => verifyBatch(deployment, n),
  accept: allTrusted(BATCH_SIZE),
  floor: true,
  // Issue 23's goal, of libsodium's ceiling (issue 15's was ≥ 90% of OpenSSL's).
  goal: atLeast("≥ 80% of ceiling", (r) => (r.ceilingRatio ?? 0) >= 0.8),
};

/** A batch answer of `count` results, every one UNTRUSTED by a signature error. */
const allUntrusted = (count: number) => (status: number, body: string) =>
  status === 200 &&
  body.endsWith(`"count":${count},"service":"continuity-receipt-verify"}`) &&
  !/"verdict":"(?!UNTRUSTED)/.test(body) &&
  body.includes('"bad_signature"');

// Every signature fails: libsodium's no stands without asking OpenSSL (docs/verifier-decisions.md),
// so a batch of forgeries should cost what a batch of good bundles costs.
const badSignatures: Scenario = {
  id: "bad-signatures",
  title: "50-bundle batch, every signature bad",
  unit: "bundles",
  itemsPerRequest: BATCH_SIZE,
  verificationsPerRequest: BATCH_SIZE * BUNDLE_RECEIPTS,
  connections: 4,
  request: (n, deployment) => ({
    method: "POST",
    path: "/verify",
    headers: keyed(deployment),
    body: badSignatureBatches[n % DISTINCT_BATCHES]!,
  }),
  accept: allUntrusted(BATCH_SIZE),
};

const batch50Receipts: Scenario = {
  id: "batch-50-receipt",
  title: "50-bundle batch, ?receipt=1",
  unit: "bundles",
  itemsPerRequest: BATCH_SIZE,
  verificationsPerRequest: BATCH_SIZE * BUNDLE_RECEIPTS,
  connections: 4,
  request: (n, deployment) => verifyBatch(deployment, n, "?receipt=1"),
  accept: (status, body) =>
    allTrusted(BATCH_SIZE)(status, body) && !body.includes('"verification_receipt_error"'),
};

const cacheHits: Scenario = {
  id: "cache-hit",
  title: "cache hits (?cache=1)",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare(deployment) {
    const response = await fetch(`${deployment.origin}/verify?cache=1`, {
      method: "POST",
      headers: keyed(deployment),
      body: benchBundle,
    });
    await response.arrayBuffer();
    return response.ok ? undefined : `priming the cache gave ${response.status}`;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify?cache=1",
    headers: keyed(deployment),
    body: benchBundle,
  }),
  accept: (status, body) => trusted(status, body) && body.includes('"cache":{"hit":true'),
  goal: atLeast("≥ 8,000 hits/s", (r) => r.requestsPerSecond >= 8_000),
};

const verifyReceipt: Scenario = {
  id: "verify-receipt",
  title: "/verify-receipt",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 1,
  connections: 16,
  prepare: prepareReceiptCheck,
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify-receipt",
    headers: keyed(deployment),
    body: receiptChecks.get(deployment.origin)!,
  }),
  accept: (status, body) =>
    status === 200 && body.includes('"valid":true') && body.includes('"digest_match":true'),
};

const verifyAnchor: Scenario = {
  id: "verify-anchor",
  title: "/verify-anchor",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify-anchor",
    headers: keyed(deployment),
    body: ANCHOR_BODY,
  }),
  accept: (status, body) => status === 200 && body.includes('"status":"verified"'),
};

const settlementIngestion: Scenario = {
  id: "settlement",
  title: "settlement ingestion (durable)",
  unit: "receipts",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 32,
  async prepare(deployment) {
    return deployment.internalToken === undefined
      ? "needs the deployment's internal token (--target-internal-token)"
      : undefined;
  },
  // Every request is a new transaction: each 200 is one receipt signed and durably stored.
  request: (n, deployment) => ({
    method: "POST",
    path: "/payment-receipts",
    headers: { ...JSON_TYPE, "x-internal-token": deployment.internalToken! },
    body: settlementBody(`${runId}-${deployment.label}`, n),
  }),
  accept: (status, body) =>
    status === 200 && body.startsWith('{"stored":true') && !body.includes('"idempotent"'),
  goal: (result, deployment) =>
    deployment.mode === "distributed"
      ? atLeast(
          "≥ 1,000 durable receipts/s (distributed)",
          (r) => r.itemsPerSecond >= 1_000,
        )(result)
      : undefined,
};

/**
 * A day's traffic of a busy verifier, by request count: mostly single bundles, some repeated
 * (cache hits), receipt and anchor checks, and the occasional batch with receipts.
 */
const MIX: readonly { share: number; scenario: Scenario }[] = [
  { share: 55, scenario: singleBundle },
  { share: 20, scenario: cacheHits },
  { share: 12, scenario: verifyReceipt },
  { share: 10, scenario: verifyAnchor },
  { share: 3, scenario: batch50Receipts },
];
const MIX_WHEEL = MIX.flatMap(({ share, scenario }) =>
  Array.from({ length: share }, () => scenario),
);
const mixedKinds = new Map<RequestSpec, Scenario>();

const mixed: Scenario = {
  id: "mixed",
  title: "mixed traffic",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest:
    MIX.reduce((sum, { share, scenario }) => sum + share * scenario.verificationsPerRequest, 0) /
    100,
  connections: 16,
  async prepare(deployment) {
    for (const { scenario } of MIX) {
      const skipped = await scenario.prepare?.(deployment);
      if (skipped !== undefined) return skipped;
    }
    return undefined;
  },
  request(n, deployment) {
    // A fixed stride through the wheel spreads each kind evenly over the run.
    const scenario = MIX_WHEEL[(n * 37) % MIX_WHEEL.length]!;
    const spec = scenario.request(n, deployment);
    mixedKinds.set(spec, scenario);
    return spec;
  },
  accept(status, body, spec) {
    const scenario = mixedKinds.get(spec);
    mixedKinds.delete(spec);
    return scenario?.accept(status, body, spec) === true;
  },
};

const largeBodies: Scenario = {
  id: "large-bodies",
  title: "16 concurrent 1 MiB batches",
  unit: "bundles",
  itemsPerRequest: BATCH_SIZE,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare() {
    largeBatch ??= batchOfSize(LARGE_BODY_BYTES, BATCH_SIZE);
    return undefined;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify",
    headers: keyed(deployment),
    body: largeBatch!,
  }),
  accept: allTrusted(BATCH_SIZE),
  goal: (result) =>
    result.peakRssMiB === null
      ? undefined
      : {
          description: "peak RSS ≤ 200 MB",
          met: result.errors === 0 && result.peakRssMiB * 1.048576 <= 200,
        },
};

/**
 * The memory goal for hostile 1 MiB bodies, held by the whole service process: issue 15's
 * (issue 16 had asked for ≤ 600 MB).
 */
const hostileRssGoal = (result: ScenarioResult): GoalCheck | undefined =>
  result.peakRssMiB === null
    ? undefined
    : {
        description: "peak RSS ≤ 400 MB",
        met: result.errors === 0 && result.peakRssMiB * 1.048576 <= 400,
      };

/** The refusal a request gets when its verdicts would list too much (`result_too_large`). */
const RESULT_TOO_LARGE = '"result_too_large"';

const hostileEmptyObjects: Scenario = {
  id: "hostile-empty",
  title: "16 concurrent 1 MiB bundles of {} receipts",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare() {
    emptyObjects ??= emptyObjectsBundle(LARGE_BODY_BYTES);
    return undefined;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify",
    headers: keyed(deployment),
    body: emptyObjects!,
  }),
  // Over 10,000 receipts: the reference's verdict, reached only after the whole body is parsed.
  accept: (status, body) => status === 200 && body.includes('"code":"too_many_receipts"'),
  goal: hostileRssGoal,
};

const hostileAmplification: Scenario = {
  id: "hostile-batch",
  title: `1 MiB batch of ${AMPLIFYING_BUNDLES} × 10,000 {} receipts`,
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare() {
    amplifying ??= amplificationBatch();
    return undefined;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify",
    headers: keyed(deployment),
    body: amplifying!,
  }),
  // Its verdicts would list ~1.7 million errors: the expected answer is the refusal.
  accept: (status, body) => status === 400 && body.includes(RESULT_TOO_LARGE),
  goal: hostileRssGoal,
};

const hostileMcpAmplification: Scenario = {
  id: "hostile-mcp",
  title: `MCP batch of ${AMPLIFYING_BUNDLES} verify_bundle × 10,000 {} receipts`,
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare() {
    amplifyingMcp ??= amplificationMcpBatch();
    return undefined;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/mcp",
    headers: {
      ...keyed(deployment),
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-03-26",
    },
    body: amplifyingMcp!,
  }),
  accept: (status, body) => status === 400 && body.includes(RESULT_TOO_LARGE),
  goal: hostileRssGoal,
};

let didKeyBombs: Buffer | undefined;

const hostileDidKey: Scenario = {
  id: "hostile-did-key",
  title: "16 concurrent 1 MiB bundles naming one did:key of 520,000 digits",
  unit: "requests",
  itemsPerRequest: 1,
  verificationsPerRequest: 0,
  connections: 16,
  async prepare() {
    didKeyBombs ??= didKeyBombBundle(LARGE_BODY_BYTES);
    return undefined;
  },
  request: (_n, deployment) => ({
    method: "POST",
    path: "/verify",
    headers: keyed(deployment),
    body: didKeyBombs!,
  }),
  // Issue 22: the key is refused by its length (not a key), a verdict in milliseconds.
  accept: (status, body) => status === 200 && body.includes('"verdict":"UNTRUSTED"'),
  goal: hostileRssGoal,
};

export const SCENARIOS: readonly Scenario[] = [
  singleBundle,
  batch50,
  badSignatures,
  batch50Receipts,
  cacheHits,
  verifyReceipt,
  verifyAnchor,
  settlementIngestion,
  mixed,
  largeBodies,
  hostileEmptyObjects,
  hostileAmplification,
  hostileMcpAmplification,
  hostileDidKey,
];
