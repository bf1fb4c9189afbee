/**
 * The cost count of a verification body (issue 32): what the worker counts after strict
 * parsing and before any signature, and the units it comes to. The bodies are the bench's
 * own, so the figures of docs/cost-bounds.md are the ones checked here (nothing timed).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  batchOfSize,
  distinctIssuersBundle,
  emptyObjectsBundle,
  generatedBundle,
} from "../../bench/fixtures.js";
import { edgePointBundle } from "../../bench/support/edge-point-bundle.js";
import {
  COST_WEIGHTS,
  type CostCounts,
  countVerificationCost,
  MAX_UNITS_PER_REQUEST,
  UNIT_CPU_MS,
  unitsForRunTime,
  unitsOf,
  weightOf,
} from "../../src/service/cost.js";
import { ServiceError } from "../../src/service/errors.js";
import { chargeableUnits } from "../../src/service/verification/answer.js";
import { publicKeyToDidKey } from "../../src/verifier/crypto/did-key.js";
import { signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { nobleCrypto } from "../../src/verifier/crypto/noble.js";
import { nodeCrypto, OPENSSL_DECIDES_EDGES } from "../../src/verifier/crypto/node.js";
import { setVerifierCrypto } from "../../src/verifier/crypto/provider.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isArray, isObject, type JsonValue } from "../../src/verifier/json/value.js";
import { corpusBytes } from "../support/corpus.js";

const MIB_BODY = 1_040_000;

function countsOf(body: Uint8Array): CostCounts {
  const parsed = parseJson(body);
  const bundles = isObject(parsed) ? parsed.get("bundles") : undefined;
  return countVerificationCost(isArray(bundles) ? bundles : [parsed], body.length);
}

describe("the cost count of a verification", () => {
  test("a corpus bundle and the heaviest legitimate batch are one unit", () => {
    const happy = countsOf(corpusBytes("vectors/02_happy_full.json"));
    assert.deepEqual(
      { ...happy, bytes: 0 },
      {
        bytes: 0,
        receipts: 6,
        signatures: 6,
        distinctKeys: 1,
        edgePointSignatures: 0,
        edgePointKeys: 0,
      },
    );
    assert.equal(unitsOf(happy), 1);
    const batch = countsOf(batchOfSize(MIB_BODY, 50));
    assert.equal(batch.signatures, 1250);
    assert.equal(batch.distinctKeys, 50);
    assert.equal(batch.edgePointSignatures, 0);
    assert.equal(unitsOf(batch), 1);
    // A megabyte of `{}` receipts is parsing only: no signature, one unit.
    const empty = countsOf(emptyObjectsBundle(MIB_BODY));
    assert.equal(empty.signatures, 0);
    assert.equal(unitsOf(empty), 1);
  });

  test("distinct keys and edge points are counted, and cost more than a unit", () => {
    const distinct = countsOf(distinctIssuersBundle(MIB_BODY));
    assert.equal(distinct.distinctKeys, distinct.signatures);
    assert.equal(distinct.edgePointSignatures, 0);
    assert.ok(unitsOf(distinct) >= 2);
    const edge = countsOf(edgePointBundle(MIB_BODY));
    assert.equal(edge.edgePointSignatures, edge.signatures);
    assert.equal(edge.edgePointKeys, edge.distinctKeys);
    assert.ok(weightOf(edge) > weightOf(distinct));
  });

  test("an edge point weighs what deciding it costs: an ordinary check, unless noble decides", () => {
    const edge = countsOf(edgePointBundle(MIB_BODY));
    const distinct = countsOf(distinctIssuersBundle(MIB_BODY));
    // The OpenSSL provider: OpenSSL 3.0 decides edge points itself (Node 20); a later OpenSSL
    // hands them to noble's step-by-step check, which makes the same body cost far more.
    const previous = setVerifierCrypto(nodeCrypto);
    try {
      if (OPENSSL_DECIDES_EDGES) assert.ok(unitsOf(edge) <= unitsOf(distinct) + 1);
      else assert.ok(unitsOf(edge) > 30);
    } finally {
      setVerifierCrypto(previous);
    }
    // noble itself (the page's provider) decides them step by step on every line.
    setVerifierCrypto(nobleCrypto);
    try {
      assert.ok(unitsOf(edge) > 30);
    } finally {
      setVerifierCrypto(previous);
    }
    // libsodium (crypto/sodium-edges.ts) decides them at about an ordinary check's cost.
    if (previous.id === "libsodium") assert.ok(unitsOf(edge) <= unitsOf(distinct) + 1);
  });

  test("a small-order key makes its signatures edge points", () => {
    const bundle = parseJson(generatedBundle(4)) as Map<string, JsonValue>;
    const receipts = bundle.get("receipts") as Map<string, JsonValue>[];
    const smallOrder = publicKeyToDidKey(Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]));
    for (const receipt of receipts.slice(0, 2)) {
      (receipt.get("issuer") as Map<string, JsonValue>).set("id", smallOrder);
    }
    const counts = countVerificationCost([bundle], 0);
    assert.equal(counts.signatures, 4);
    assert.equal(counts.distinctKeys, 2);
    assert.equal(counts.edgePointSignatures, 2);
    assert.equal(counts.edgePointKeys, 1);
  });

  test("a did:key that names no key is no edge point; a counterparty attestation counts", () => {
    const bundle = parseJson(generatedBundle(3)) as Map<string, JsonValue>;
    const receipts = bundle.get("receipts") as Map<string, JsonValue>[];
    const identity = `did:key:z${"1".repeat(46)}`;
    (receipts[0]!.get("issuer") as Map<string, JsonValue>).set("id", identity);
    const attester = signerFromSeed(new Uint8Array(32).fill(7)).did;
    const attestation = new Map<string, JsonValue>([
      ["alg", "ed25519"],
      ["key", attester],
      ["value", "AAAA"],
    ]);
    const body = receipts[1]!.get("body") as Map<string, JsonValue>;
    body.set("counterparty", new Map([["attestation", attestation]]));
    const counts = countVerificationCost([bundle], 0);
    assert.equal(counts.signatures, 4);
    // The identity did:key is not a 47-digit key: it names no key, so no signature under it
    // is an edge point (the verifier refuses it before any check).
    assert.equal(counts.distinctKeys, 3);
    assert.equal(counts.edgePointSignatures, 0);
  });

  test("a bundle over the receipt limit is refused before its signatures: none counted", () => {
    const receipts = Array.from({ length: 10_001 }, () => ({ sig: { value: "x" } }));
    const bundle = parseJson(Buffer.from(JSON.stringify({ receipts })));
    assert.equal(countVerificationCost([bundle], 0).signatures, 0);
  });

  test("the units authorised bound the charge; past the limit or the cap is a coded refusal", () => {
    const counts = countsOf(distinctIssuersBundle(MIB_BODY));
    const units = unitsOf(counts);
    assert.equal(chargeableUnits(counts, units), units);
    assert.throws(
      () => chargeableUnits(counts, units - 1),
      (error) => error instanceof ServiceError && error.code === "cost_exceeds_cap",
    );
    const huge = { ...counts, signatures: 1_000_000 };
    assert.throws(
      () => chargeableUnits(huge, MAX_UNITS_PER_REQUEST),
      (error) => error instanceof ServiceError && error.code === "cost_exceeds_limit",
    );
  });

  test("a deadline charge is by run time, at least one unit", () => {
    assert.equal(unitsForRunTime(1), 1);
    assert.equal(unitsForRunTime(UNIT_CPU_MS * 4), 4);
    assert.equal(unitsForRunTime(UNIT_CPU_MS * 4 + 1), 5);
    assert.equal(COST_WEIGHTS.signature, 1);
  });
});
