/**
 * The embedded `Idempotency-Key` store: claims, answers, expiry and its bounds. (The Redis
 * store runs through the same paths in test/service/plugins/idempotency.test.ts.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  IDEMPOTENCY_CLAIM_MS,
  IDEMPOTENCY_TTL_MS,
  idempotencyEntry,
  MemoryIdempotencyStore,
  requestFingerprint,
} from "../../src/access/idempotency-store.js";

const answer = (text: string) => ({
  status: 201,
  headers: { "content-type": "application/json; charset=utf-8" },
  body: Buffer.from(text),
});

describe("MemoryIdempotencyStore", () => {
  test("a claim, then its answer; only the claim's holder settles it", async () => {
    const clock = { now: 1_000 };
    const store = new MemoryIdempotencyStore(() => clock.now);
    const begun = await store.begin("e", "f1");
    assert.equal(begun.state, "claimed");
    assert.ok(begun.state === "claimed");
    assert.deepEqual(await store.begin("e", "f1"), { state: "in_flight", fingerprint: "f1" });
    await store.complete("e", "not the claim", "f1", answer("stranger"));
    assert.equal((await store.begin("e", "f1")).state, "in_flight");
    await store.complete("e", begun.claim, "f1", answer("first"));
    const again = await store.begin("e", "f1");
    assert.ok(again.state === "answered");
    assert.equal(again.answer.body.toString(), "first");
    assert.equal(again.answer.status, 201);
    // Kept 24 h, then gone.
    clock.now += IDEMPOTENCY_TTL_MS + 1_001;
    assert.equal((await store.begin("e", "f2")).state, "claimed");
  });

  test("a released claim, or one that outlived its request, frees the key", async () => {
    const clock = { now: 0 };
    const store = new MemoryIdempotencyStore(() => clock.now);
    const begun = await store.begin("e", "f");
    assert.ok(begun.state === "claimed");
    await store.release("e", begun.claim);
    const next = await store.begin("e", "f");
    assert.ok(next.state === "claimed");
    clock.now += IDEMPOTENCY_CLAIM_MS + 1;
    const after = await store.begin("e", "f");
    assert.equal(after.state, "claimed");
    // The expired claim's late answer does not overwrite the new claim.
    await store.complete("e", next.claim, "f", answer("late"));
    assert.equal((await store.begin("e", "f")).state, "in_flight");
  });

  test("bounded by entries and bytes, oldest first; expired entries are swept", async () => {
    const clock = { now: 0 };
    const store = new MemoryIdempotencyStore(() => clock.now, { maxEntries: 3, maxBytes: 4096 });
    for (const name of ["a", "b", "c", "d"]) await store.begin(name, "f");
    assert.equal(store.size, 3);
    assert.equal((await store.begin("a", "f")).state, "claimed");
    const big = await store.begin("big", "f");
    assert.ok(big.state === "claimed");
    await store.complete("big", big.claim, "f", answer("x".repeat(3000)));
    assert.ok(store.size <= 3);
    clock.now += IDEMPOTENCY_TTL_MS + 1;
    await store.begin("fresh", "f");
    assert.equal(store.size, 1);
  });

  test("entries are named by principal and key together; fingerprints by method, URL, body", () => {
    assert.notEqual(idempotencyEntry("key:aaaaaaaaaaaa", "k"), idempotencyEntry("anonymous", "k"));
    assert.match(idempotencyEntry("key:aaaaaaaaaaaa", "k"), /^[0-9a-f]{64}$/);
    const body = Buffer.from("{}");
    const base = requestFingerprint("POST", "/verify", body);
    assert.notEqual(base, requestFingerprint("POST", "/verify?receipt=1", body));
    assert.notEqual(base, requestFingerprint("POST", "/verify", Buffer.from("{ }")));
    assert.equal(base, requestFingerprint("POST", "/verify", Buffer.from("{}")));
  });
});
