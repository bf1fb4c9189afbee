/** The embedded cap store (the shared contract plus its clock and memory), and the responses. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  capReachedResponse,
  rateLimitHeaders,
  secondsToUtcMidnight,
} from "../../src/access/caps.js";
import { MemoryCapStore } from "../../src/access/memory-cap-store.js";
import { ANONYMOUS, keyPrincipal, x402Principal } from "../../src/access/principal.js";
import { at, capStoreContract } from "./cap-store-contract.js";

capStoreContract("MemoryCapStore", async () => {
  const store = new MemoryCapStore();
  return { store, dispose: () => store.close() };
});

describe("MemoryCapStore", () => {
  test("uses its injected clock and rolls over with it", async () => {
    const clock = { now: at("2026-11-21T23:59:59Z") };
    const store = new MemoryCapStore(() => clock.now);
    assert.deepEqual(await store.consume("anonymous", 2), {
      allowed: true,
      limit: 2,
      remaining: 1,
      resetSeconds: 1,
    });
    await store.consume("anonymous", 2);
    assert.equal((await store.consume("anonymous", 2)).allowed, false);
    clock.now = at("2026-11-22T00:00:01Z");
    assert.deepEqual(await store.consume("anonymous", 2), {
      allowed: true,
      limit: 2,
      remaining: 1,
      resetSeconds: 86_399,
    });
  });

  test("a new day drops the counters of earlier days", async () => {
    const store = new MemoryCapStore();
    for (let i = 0; i < 10; i += 1) {
      await store.consume(`key:${String(i).padStart(12, "0")}`, 5, at("2026-11-21T10:00:00Z"));
    }
    assert.equal(store.size, 10);
    await store.consume("anonymous", 5, at("2026-11-22T10:00:00Z"));
    assert.equal(store.size, 1);
  });
});

describe("cap buckets and responses", () => {
  test("buckets are the principals: key id, lowercased payer, anonymous", () => {
    assert.equal(keyPrincipal("0123456789ab"), "key:0123456789ab");
    assert.equal(
      x402Principal("0xAbCdEf0123456789aBcDeF0123456789ABCDEF01"),
      "x402:0xabcdef0123456789abcdef0123456789abcdef01",
    );
    assert.equal(ANONYMOUS, "anonymous");
    assert.throws(() => keyPrincipal("key with spaces"), RangeError);
    assert.throws(() => x402Principal("0x1234"), RangeError);
  });

  test("the rate-limit headers of an allowed request: the trio and the IETF fields", () => {
    assert.deepEqual(
      rateLimitHeaders({ allowed: true, limit: 1000, remaining: 998, resetSeconds: 3600 }, "key"),
      {
        "X-RateLimit-Limit": "1000",
        "X-RateLimit-Remaining": "998",
        "X-RateLimit-Reset": "3600",
        "RateLimit-Policy": '"key";q=1000;w=86400',
        RateLimit: '"key";r=998;t=3600',
      },
    );
  });

  test("the 429 of a request over its cap", () => {
    assert.deepEqual(
      capReachedResponse(
        { allowed: false, limit: 2000, remaining: 0, resetSeconds: 42 },
        "anonymous",
      ),
      {
        statusCode: 429,
        headers: {
          "X-RateLimit-Limit": "2000",
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": "42",
          "RateLimit-Policy": '"anonymous";q=2000;w=86400',
          RateLimit: '"anonymous";r=0;t=42',
          "Retry-After": "86400",
        },
        body: {
          error: "daily_cap_reached",
          hint: "the daily cap of 2000 requests is reached; it resets at 00:00 UTC",
        },
      },
    );
  });

  test("seconds to midnight", () => {
    assert.equal(secondsToUtcMidnight(at("2026-11-21T00:00:00Z")), 86_400);
    assert.equal(secondsToUtcMidnight(at("2026-11-21T23:00:00Z")), 3600);
  });
});
