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
  idempotencyOwner,
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

  test("each principal holds at most its share; its own oldest go first, others' stay (issue 37)", async () => {
    const clock = { now: 0 };
    const store = new MemoryIdempotencyStore(() => clock.now, {
      maxEntries: 100,
      maxBytes: 1024 * 1024,
      maxEntriesPerOwner: 3,
      maxBytesPerOwner: 4096,
    });
    const quiet = idempotencyOwner("key:quietquietqu");
    const loud = idempotencyOwner("key:loudloudloud");
    const kept = await store.begin("quiet-1", "f", quiet);
    assert.ok(kept.state === "claimed");
    await store.complete("quiet-1", kept.claim, "f", answer("kept"));
    // A flood of keys by one principal: it evicts its own entries, never the quiet one's.
    for (let index = 0; index < 50; index += 1) await store.begin(`loud-${index}`, "f", loud);
    assert.equal(store.entriesOf(loud), 3);
    assert.equal(store.entriesOf(quiet), 1);
    const replay = await store.begin("quiet-1", "f", quiet);
    assert.equal(replay.state, "answered");
    // The loud principal's newest three are what it keeps, oldest evicted first.
    assert.equal((await store.begin("loud-49", "f", loud)).state, "in_flight");
    assert.equal((await store.begin("loud-46", "f", loud)).state, "claimed");
    // Bytes count too: one large answer pushes out the same principal's older entries.
    const big = await store.begin("loud-big", "f", loud);
    assert.ok(big.state === "claimed");
    await store.complete("loud-big", big.claim, "f", answer("x".repeat(3000)));
    assert.equal(store.entriesOf(loud), 1);
    assert.equal((await store.begin("quiet-1", "f", quiet)).state, "answered");
    // Owners are hashes of the principal, distinct per principal.
    assert.match(quiet, /^[0-9a-f]{64}$/);
    assert.notEqual(quiet, loud);
  });

  test("the global bound stays a backstop across principals", async () => {
    const store = new MemoryIdempotencyStore(() => 0, { maxEntries: 4, maxEntriesPerOwner: 3 });
    for (const principal of ["a", "b", "c"]) {
      for (const index of [1, 2]) {
        await store.begin(`${principal}-${index}`, "f", idempotencyOwner(principal));
      }
    }
    assert.equal(store.size, 4);
    assert.equal(store.entriesOf(idempotencyOwner("a")), 0);
    assert.equal(store.entriesOf(idempotencyOwner("c")), 2);
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
