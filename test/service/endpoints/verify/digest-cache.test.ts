/** `POST /verify?cache=1` (service.md §1 "Digest cache"), with a clock the test moves. */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { MemoryDigestCache } from "../../../../src/cache/memory-digest-cache.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import { verifyVerificationReceipt } from "../../../../src/verifier/verification-receipt/index.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const ANCHORLESS = corpusBytes("vectors/10b_anchor_missing.json");

interface CachedPayload {
  verdict: string;
  provisional_reasons: string[];
  verification_receipt?: Record<string, unknown>;
  cache?: { hit: boolean; cached_at: string; age_s?: number };
  service: string;
}

describe("POST /verify?cache=1", () => {
  const clock = { now: Date.UTC(2026, 10, 21, 12, 0, 0) };
  let service: TestService;
  before(async () => {
    service = await startTestService({}, { clock: () => clock.now });
  });
  after(() => service.close());
  beforeEach(async () => {
    await service.app.digestCache.close();
  });

  const post = async (url: string, body: Uint8Array | string) => {
    const response = await service.app.inject({ method: "POST", url, payload: Buffer.from(body) });
    return { status: response.statusCode, text: response.body, json: response.json() };
  };
  const cacheSize = () => (service.app.digestCache as MemoryDigestCache).size;

  test("a miss, then a hit with the original cached_at and the age in whole seconds", async () => {
    const miss = await post("/verify?cache=1", GOOD);
    assert.equal(miss.status, 200);
    const missPayload = miss.json as CachedPayload;
    assert.equal(missPayload.cache?.hit, false);
    assert.match(missPayload.cache?.cached_at ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(Object.keys(missPayload).slice(-2), ["cache", "service"]);

    clock.now += 7_900;
    const hit = await post("/verify?cache=true", GOOD);
    const hitPayload = hit.json as CachedPayload;
    assert.deepEqual(hitPayload.cache, {
      hit: true,
      cached_at: missPayload.cache?.cached_at,
      age_s: 7,
    });
    const { cache: _missCache, ...missVerdict } = missPayload;
    const { cache: _hitCache, ...hitVerdict } = hitPayload;
    assert.deepEqual(hitVerdict, missVerdict);

    const uncached = await post("/verify", GOOD);
    const { cache: _none, ...plain } = missPayload;
    assert.deepEqual(uncached.json, plain);
  });

  test("a receipt issued on a hit is byte-identical to the miss's and verifies", async () => {
    const miss = await post("/verify?cache=1&receipt=1", GOOD);
    clock.now += 3_000;
    const hit = await post("/verify?receipt=1&cache=1", GOOD);
    const missReceipt = (miss.json as CachedPayload).verification_receipt;
    const hitReceipt = (hit.json as CachedPayload).verification_receipt;
    assert.ok(missReceipt);
    assert.equal(JSON.stringify(hitReceipt), JSON.stringify(missReceipt));
    const check = verifyVerificationReceipt(parseJson(JSON.stringify(hitReceipt)), {
      bundle: parseJson(GOOD),
    });
    assert.equal(check.valid, true);
    assert.equal(check.digest_match, true);
  });

  test("a hit can carry a receipt the first request did not ask for", async () => {
    const miss = await post("/verify?cache=1", GOOD);
    assert.equal((miss.json as CachedPayload).verification_receipt, undefined);
    const hit = await post("/verify?cache=1&receipt=1", GOOD);
    const payload = hit.json as CachedPayload;
    assert.equal(payload.cache?.hit, true);
    assert.equal(payload.verification_receipt?.verified_at, payload.cache?.cached_at);
  });

  test("entries expire after 900 s", async () => {
    await post("/verify?cache=1", GOOD);
    clock.now += 899_000;
    assert.equal((await post("/verify?cache=1", GOOD)).json.cache.hit, true);
    clock.now += 1_000;
    assert.equal((await post("/verify?cache=1", GOOD)).json.cache.hit, false);
  });

  test("require_anchor is part of the key; receipt is not", async () => {
    await post("/verify?cache=1", ANCHORLESS);
    const anchored = (await post("/verify?cache=1&require_anchor=1", ANCHORLESS)).json;
    assert.equal(anchored.cache.hit, false);
    assert.equal(anchored.verdict, "PROVISIONAL");
    assert.deepEqual(anchored.provisional_reasons, ["anchor_missing"]);
    const again = (await post("/verify?cache=1&require_anchor=1", ANCHORLESS)).json;
    assert.equal(again.cache.hit, true);
    assert.equal(again.verdict, "PROVISIONAL");
    assert.equal((await post("/verify?cache=1&receipt=1", ANCHORLESS)).json.verdict, "TRUSTED");
  });

  test("at most 256 entries: the oldest is evicted first", async () => {
    const text = new TextDecoder().decode(GOOD);
    // The same bundle, 257 different request bodies (trailing whitespace is allowed JSON).
    for (let spaces = 0; spaces <= 256; spaces += 1) {
      const body = `${text}${" ".repeat(spaces)}`;
      assert.equal((await post("/verify?cache=1", body)).json.cache.hit, false);
    }
    assert.equal(cacheSize(), 256);
    assert.equal((await post("/verify?cache=1", `${text}${" ".repeat(256)}`)).json.cache.hit, true);
    assert.equal((await post("/verify?cache=1", text)).json.cache.hit, false);
  });

  test("batches and refused bodies are never cached; without the flag nothing is kept", async () => {
    const batch = `{"bundles":[${new TextDecoder().decode(GOOD)}]}`;
    const batchAnswer = await post("/verify?cache=1", batch);
    assert.equal(batchAnswer.status, 200);
    assert.equal(batchAnswer.json.cache, undefined);
    assert.equal(batchAnswer.json.count, 1);
    assert.equal((await post("/verify?cache=1", '{"a":1,"a":2}')).status, 400);
    assert.equal((await post("/verify?cache=1", "[]")).status, 400);
    await post("/verify", GOOD);
    await post("/verify?receipt=1", GOOD);
    await post("/verify?nocache=1", GOOD);
    assert.equal(cacheSize(), 0);
  });
});
