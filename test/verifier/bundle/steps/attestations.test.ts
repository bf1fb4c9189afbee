/** Step I of verifier.md §4: counterparty attestations on deliveries, then input provenance. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { VerifyResult } from "../../../../src/verifier/bundle/result.js";
import type { JsonObject } from "../../../../src/verifier/json/value.js";
import { attestDelivery, type JsonInput, toJson } from "../../../../src/verifier/producer/index.js";
import {
  chain,
  counterparty,
  decisionBody,
  deliveryBody,
  digestOf,
  expectOutcome,
  standardRecords,
  stranger,
  V01,
  without,
} from "./fixtures.js";

const withDelivery = (body: JsonInput): JsonObject =>
  chain(V01, standardRecords({ delivery: { body } }));

const attested = (): JsonObject => attestDelivery(deliveryBody, counterparty);

/** `attested()` with its counterparty edited after the counterparty signed. */
function attestedThen(edit: (counterpartyObject: JsonObject) => void): JsonObject {
  const body = attested();
  edit(body.get("counterparty") as JsonObject);
  return body;
}

function attestationSummary(result: VerifyResult, entries: JsonInput): void {
  assert.deepStrictEqual(result.summary.get("attestations"), toJson(entries));
}

const BAD = ["bad_attestation", "counterparty attestation does not verify", "delivery"] as const;

describe("I. counterparty attestations", () => {
  test("a valid attestation is reported in the summary (vector 13)", () => {
    const result = expectOutcome(withDelivery(attested()), { verdict: "TRUSTED" });
    attestationSummary(result, [
      {
        receipt_id: "delivery",
        counterparty: counterparty.did,
        attestation: "valid",
        key: counterparty.did,
      },
    ]);
  });

  for (const absent of [null, {}, [], "", 0, false]) {
    test(`an attestation that is falsy in Python (${JSON.stringify(absent)}) is absent, not invalid`, () => {
      const body = { ...deliveryBody, counterparty: { id: counterparty.did, attestation: absent } };
      const result = expectOutcome(withDelivery(body), { verdict: "TRUSTED" });
      attestationSummary(result, [
        { receipt_id: "delivery", counterparty: counterparty.did, attestation: "absent" },
      ]);
    });
  }

  test("a counterparty that is not an object has no attestation and no id", () => {
    const result = expectOutcome(
      withDelivery({ ...deliveryBody, counterparty: counterparty.did }),
      {
        verdict: "TRUSTED",
      },
    );
    attestationSummary(result, [
      { receipt_id: "delivery", counterparty: null, attestation: "absent" },
    ]);
  });

  test("a missing counterparty is {} for the summary, besides the missing field", () => {
    const result = expectOutcome(withDelivery(without(deliveryBody, "counterparty")), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "missing body fields ['counterparty']", "delivery"]],
    });
    attestationSummary(result, [
      { receipt_id: "delivery", counterparty: null, attestation: "absent" },
    ]);
  });

  test("bad_attestation: the body changed after the counterparty signed (vector 13b)", () => {
    const body = attested();
    body.set("response_hash", digestOf("d"));
    const result = expectOutcome(withDelivery(body), { verdict: "UNTRUSTED", errors: [BAD] });
    attestationSummary(result, [
      {
        receipt_id: "delivery",
        counterparty: counterparty.did,
        attestation: "invalid",
        key: counterparty.did,
      },
    ]);
  });

  test("bad_attestation: the attestation covers the rest of the counterparty object", () => {
    const body = attestedThen((party) => party.set("name", "Counterparty Ltd"));
    expectOutcome(withDelivery(body), { verdict: "UNTRUSTED", errors: [BAD] });
  });

  for (const [label, edit, key] of [
    ["an alg other than ed25519", (a: JsonObject) => a.set("alg", "EdDSA"), counterparty.did],
    ["a non-string key", (a: JsonObject) => a.set("key", 5), 5],
    ["a non-string value", (a: JsonObject) => a.set("value", 5), counterparty.did],
    [
      "a key that is not a did:key",
      (a: JsonObject) => a.set("key", "did:web:x.example"),
      "did:web:x.example",
    ],
  ] as const) {
    test(`bad_attestation: ${label}`, () => {
      const body = attestedThen((party) => edit(party.get("attestation") as JsonObject));
      const result = expectOutcome(withDelivery(body), { verdict: "UNTRUSTED", errors: [BAD] });
      attestationSummary(result, [
        { receipt_id: "delivery", counterparty: counterparty.did, attestation: "invalid", key },
      ]);
    });
  }

  test("bad_attestation: a truthy attestation that is not an object has key None", () => {
    const body = { ...deliveryBody, counterparty: { id: counterparty.did, attestation: "signed" } };
    const result = expectOutcome(withDelivery(body), { verdict: "UNTRUSTED", errors: [BAD] });
    attestationSummary(result, [
      { receipt_id: "delivery", counterparty: counterparty.did, attestation: "invalid", key: null },
    ]);
  });

  test("the attestation key is never compared with counterparty.id", () => {
    const result = expectOutcome(withDelivery(attestDelivery(deliveryBody, stranger)), {
      verdict: "TRUSTED",
    });
    attestationSummary(result, [
      {
        receipt_id: "delivery",
        counterparty: counterparty.did,
        attestation: "valid",
        key: stranger.did,
      },
    ]);
  });

  test("every delivery gets a summary entry, in chain order", () => {
    const records = standardRecords({ delivery: { body: attested() } });
    records.splice(4, 0, { ...records[3]!, receiptId: "delivery-2", body: deliveryBody });
    const result = expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
    attestationSummary(result, [
      {
        receipt_id: "delivery",
        counterparty: counterparty.did,
        attestation: "valid",
        key: counterparty.did,
      },
      { receipt_id: "delivery-2", counterparty: counterparty.did, attestation: "absent" },
    ]);
  });
});

describe("I. input provenance", () => {
  const withProvenance = (provenance: JsonInput): JsonObject =>
    chain(
      V01,
      standardRecords({ decision: { body: { ...decisionBody, input_provenance: provenance } } }),
    );
  const sourcesHash = (hash: JsonInput): JsonObject =>
    withProvenance({ policy_id: "egress.default", observed_sources_hash: hash });

  for (const [hash, repr] of [
    ["md5:d41d8cd98f00b204e9800998ecf8427e", "'md5:d41d8cd98f00b204e9800998ecf8427e'"],
    ["SHA256:abc", "'SHA256:abc'"],
    [5, "5"],
    [[digestOf("3")], `['${digestOf("3")}']`],
  ] as const) {
    test(`provenance_invalid: observed_sources_hash ${repr}`, () => {
      expectOutcome(sourcesHash(hash), {
        verdict: "UNTRUSTED",
        errors: [
          ["provenance_invalid", `observed_sources_hash has unsupported form: ${repr}`, "decision"],
        ],
      });
    });
  }

  for (const hash of [
    `merkle-sha256:${"4".repeat(64)}`,
    "sha256:",
    "merkle-sha256:not-hex",
    null,
  ]) {
    test(`observed_sources_hash ${JSON.stringify(hash)} passes (a prefix test only; null is absent)`, () => {
      expectOutcome(sourcesHash(hash), { verdict: "TRUSTED" });
    });
  }

  test("input_provenance that is not an object is not checked", () => {
    expectOutcome(withProvenance("gate"), { verdict: "TRUSTED" });
  });

  test("attestation errors come before provenance errors, whatever the chain order", () => {
    const body = attested();
    body.set("response_hash", digestOf("d"));
    const records = standardRecords({
      decision: { body: { ...decisionBody, input_provenance: { observed_sources_hash: "md5:x" } } },
      delivery: { body },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        BAD,
        ["provenance_invalid", "observed_sources_hash has unsupported form: 'md5:x'", "decision"],
      ],
    });
  });
});
