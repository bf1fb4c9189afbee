/** The four binding rules of service.md §5, each on a real bundle from the corpus. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { keccak_256 } from "@noble/hashes/sha3";
import { bindTaskHash, hash32, terminalReceipt } from "../../src/erc8004/binding.js";
import { recordDigest } from "../../src/verifier/crypto/digest.js";
import { isArray, isObject, type JsonObject } from "../../src/verifier/json/value.js";
import { corpusValue } from "../support/corpus.js";

function bundle(file: string): JsonObject {
  const value = corpusValue(`vectors/${file}`);
  assert.ok(isObject(value));
  return value;
}

function receiptsOf(value: JsonObject): JsonObject[] {
  const receipts = value.get("receipts");
  assert.ok(isArray(receipts));
  return receipts.filter(isObject);
}

const taskId = (value: JsonObject) => Buffer.from(value.get("task_id") as string, "utf8");
const bytes = (hex: string) => Buffer.from(hex, "hex");
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest();

describe("hash32", () => {
  test("reads 0x and sha256: spellings, in either case", () => {
    const lower = "ab".repeat(32);
    assert.deepEqual(hash32(`0x${lower}`), bytes(lower));
    assert.deepEqual(hash32(`sha256:${lower}`), bytes(lower));
    assert.deepEqual(hash32(`0x${lower.toUpperCase()}`), bytes(lower));
  });

  test("refuses other prefixes, lengths and digits", () => {
    for (const text of [
      "ab".repeat(32),
      `0x${"ab".repeat(31)}`,
      `0x${"ab".repeat(33)}`,
      `sha512:${"ab".repeat(32)}`,
      `0X${"ab".repeat(32)}`,
      `0x${"g".repeat(64)}`,
    ]) {
      assert.equal(hash32(text), null, text);
    }
  });
});

describe("bindTaskHash", () => {
  const minimal = bundle("01_happy_minimal.json");

  test("SHA-256 of the UTF-8 task_id", () => {
    assert.equal(bindTaskHash(minimal, sha256(taskId(minimal))), "task_id_sha256");
  });

  test("keccak-256 of the UTF-8 task_id", () => {
    assert.equal(bindTaskHash(minimal, keccak_256(taskId(minimal))), "task_id_keccak256");
  });

  test("the response_hash of a delivery.attestation, whatever its counterparty attestation", () => {
    for (const file of ["13_attestation_valid.json", "02_happy_full.json"]) {
      const value = bundle(file);
      const delivery = receiptsOf(value).find((r) => r.get("type") === "delivery.attestation");
      assert.ok(delivery, file);
      const responseHash = (delivery.get("body") as JsonObject).get("response_hash") as string;
      assert.match(responseHash, /^sha256:[0-9a-f]{64}$/);
      assert.equal(bindTaskHash(value, hash32(responseHash)!), "delivery_response_hash", file);
    }
  });

  test("the receipt digest (JCS minus sig) of the task.termination receipt", () => {
    const termination = receiptsOf(minimal).at(-1)!;
    assert.equal(termination.get("type"), "task.termination");
    assert.equal(terminalReceipt(minimal), termination);
    const digest = recordDigest(termination);
    assert.equal(bindTaskHash(minimal, hash32(digest)!), "terminal_receipt_digest");
    assert.equal(bindTaskHash(minimal, hash32(`0x${digest.slice(7)}`)!), "terminal_receipt_digest");
  });

  test("the termination receipt is terminal even when a later receipt follows it", () => {
    const value = bundle("02_happy_full.json");
    const receipts = value.get("receipts") as JsonObject[];
    const termination = receipts.find((r) => r.get("type") === "task.termination")!;
    const reordered = new Map(value);
    reordered.set("receipts", [
      ...receipts.filter((r) => r !== termination),
      termination,
      receipts[0]!,
    ]);
    assert.equal(terminalReceipt(reordered), termination);
    assert.equal(
      bindTaskHash(reordered, hash32(recordDigest(termination))!),
      "terminal_receipt_digest",
    );
    assert.equal(bindTaskHash(reordered, hash32(recordDigest(receipts[0]!))!), null);
  });

  test("without a termination receipt, the last receipt is terminal", () => {
    const value = bundle("04_missing_termination.json");
    const last = receiptsOf(value).at(-1)!;
    assert.notEqual(last.get("type"), "task.termination");
    assert.equal(bindTaskHash(value, hash32(recordDigest(last))!), "terminal_receipt_digest");
    const first = receiptsOf(value)[0]!;
    assert.equal(bindTaskHash(value, hash32(recordDigest(first))!), null);
  });

  test("an unrelated hash binds to nothing", () => {
    assert.equal(bindTaskHash(minimal, bytes("00".repeat(32))), null);
    // SHA-256 of the task_id of another bundle.
    assert.equal(bindTaskHash(minimal, sha256(taskId(bundle("02_happy_full.json")))), null);
  });

  test("a bundle without task_id or receipts binds only what it has", () => {
    const bare = new Map(minimal);
    bare.delete("task_id");
    assert.equal(bindTaskHash(bare, sha256(taskId(minimal))), null);
    bare.set("receipts", "not a list");
    assert.equal(terminalReceipt(bare), null);
    assert.equal(bindTaskHash(bare, bytes("00".repeat(32))), null);
  });
});
