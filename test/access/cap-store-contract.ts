/**
 * The behaviour every `CapStore` must have (architecture.md: one contract suite, run against
 * each implementation). Instants are passed explicitly, so the suite runs unchanged against a
 * store whose clock cannot be injected (Redis). Each test uses its own buckets.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type CapStore, consumeAll } from "../../src/access/caps.js";

export interface CapStoreFixture {
  store: CapStore;
  dispose(): Promise<void>;
}

/** Milliseconds of a UTC instant given as RFC 3339 text. */
export const at = (iso: string) => Date.parse(iso);

export function capStoreContract(name: string, open: () => Promise<CapStoreFixture>): void {
  describe(`CapStore contract: ${name}`, () => {
    let fixture: CapStoreFixture;
    let store: CapStore;
    before(async () => {
      fixture = await open();
      store = fixture.store;
    });
    after(() => fixture.dispose());

    test("remaining counts down to 0, then requests are refused", async () => {
      const noon = at("2026-11-21T12:00:00Z");
      const seen = [];
      for (let i = 0; i < 5; i += 1) seen.push(await store.consume("key:countdown", 3, noon));
      assert.deepEqual(seen, [
        { allowed: true, limit: 3, remaining: 2, resetSeconds: 43_200 },
        { allowed: true, limit: 3, remaining: 1, resetSeconds: 43_200 },
        { allowed: true, limit: 3, remaining: 0, resetSeconds: 43_200 },
        { allowed: false, limit: 3, remaining: 0, resetSeconds: 43_200 },
        { allowed: false, limit: 3, remaining: 0, resetSeconds: 43_200 },
      ]);
    });

    test("a refused request is not counted", async () => {
      const now = at("2026-11-21T08:00:00Z");
      assert.equal((await store.consume("key:refused", 1, now)).allowed, true);
      for (let i = 0; i < 3; i += 1) {
        assert.equal((await store.consume("key:refused", 1, now)).allowed, false);
      }
      // Had the refusals counted, a cap raised to 2 would still refuse.
      assert.deepEqual(await store.consume("key:refused", 2, now), {
        allowed: true,
        limit: 2,
        remaining: 0,
        resetSeconds: 57_600,
      });
    });

    test("buckets are counted separately", async () => {
      const now = at("2026-11-21T09:00:00Z");
      assert.equal((await store.consume("key:aaaaaaaaaaaa", 1, now)).allowed, true);
      assert.equal((await store.consume("key:aaaaaaaaaaaa", 1, now)).allowed, false);
      assert.equal((await store.consume("key:bbbbbbbbbbbb", 1, now)).allowed, true);
      assert.equal((await store.consume("anonymous", 1, now)).allowed, true);
    });

    test("counters reset at 00:00 UTC", async () => {
      const lastMoment = at("2026-11-21T23:59:59.999Z");
      assert.deepEqual(await store.consume("x402:0xrollover", 1, lastMoment), {
        allowed: true,
        limit: 1,
        remaining: 0,
        resetSeconds: 1,
      });
      assert.equal((await store.consume("x402:0xrollover", 1, lastMoment)).allowed, false);
      const midnight = at("2026-11-22T00:00:00Z");
      assert.deepEqual(await store.consume("x402:0xrollover", 1, midnight), {
        allowed: true,
        limit: 1,
        remaining: 0,
        resetSeconds: 86_400,
      });
      assert.equal((await store.consume("x402:0xrollover", 1, midnight)).allowed, false);
    });

    test("resetSeconds is the whole seconds to midnight, rounded up, at least 1", async () => {
      const cases: [string, number][] = [
        ["2026-11-23T00:00:00.000Z", 86_400],
        ["2026-11-23T00:00:00.001Z", 86_400],
        ["2026-11-23T18:30:00.000Z", 19_800],
        ["2026-11-23T23:59:58.200Z", 2],
        ["2026-11-23T23:59:59.000Z", 1],
        ["2026-11-23T23:59:59.999Z", 1],
      ];
      for (const [iso, seconds] of cases) {
        const decision = await store.consume(`key:reset-${iso}`, 10, at(iso));
        assert.equal(decision.resetSeconds, seconds, iso);
      }
    });

    test("a cap of 0 refuses everything", async () => {
      assert.deepEqual(await store.consume("key:paused", 0, at("2026-11-21T00:00:00Z")), {
        allowed: false,
        limit: 0,
        remaining: 0,
        resetSeconds: 86_400,
      });
    });

    test("concurrent requests never exceed the cap", async () => {
      const now = at("2026-11-21T10:00:00Z");
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => store.consume("key:concurrent", 20, now)),
      );
      assert.equal(decisions.filter((decision) => decision.allowed).length, 20);
      const remaining = decisions
        .filter((decision) => decision.allowed)
        .map((decision) => decision.remaining)
        .sort((a, b) => a - b);
      assert.deepEqual(
        remaining,
        Array.from({ length: 20 }, (_, index) => index),
      );
    });

    test("a refund gives one request back, for its own day, never below 0", async () => {
      const now = at("2026-11-21T11:00:00Z");
      assert.equal((await store.consume("key:refund", 2, now)).remaining, 1);
      assert.equal((await store.consume("key:refund", 2, now)).remaining, 0);
      await store.refund("key:refund", now);
      assert.deepEqual(await store.consume("key:refund", 2, now), {
        allowed: true,
        limit: 2,
        remaining: 0,
        resetSeconds: 46_800,
      });
      assert.equal((await store.consume("key:refund", 2, now)).allowed, false);
      // Three refunds for two counted requests: the third finds 0 and leaves it there.
      for (let i = 0; i < 3; i += 1) await store.refund("key:refund", now);
      assert.equal((await store.consume("key:refund", 2, now)).remaining, 1);
      // A refund of another bucket or another day touches nothing here.
      await store.refund("key:refund-other", now);
      await store.refund("key:refund", at("2026-11-20T11:00:00Z"));
      assert.equal((await store.consume("key:refund", 2, now)).remaining, 0);
      // Nor does a refund of a day never counted make room on it later.
      await store.refund("key:refund-fresh", now);
      assert.equal((await store.consume("key:refund-fresh", 1, now)).remaining, 0);
      assert.equal((await store.consume("key:refund-fresh", 1, now)).allowed, false);
    });

    test("concurrent requests that are refunded never let the cap be exceeded", async () => {
      // 60 requests race for a cap of 10; every second one admitted is then refused (refunded)
      // while the others are still running. At no point may more than 10 hold a place, and
      // in the end exactly the kept ones are counted.
      const now = at("2026-11-21T13:00:00Z");
      let held = 0;
      let mostHeld = 0;
      let kept = 0;
      let admitted = 0;
      await Promise.all(
        Array.from({ length: 60 }, async () => {
          const decision = await store.consume("key:reserve", 10, now);
          if (!decision.allowed) return;
          held += 1;
          mostHeld = Math.max(mostHeld, held);
          admitted += 1;
          if (admitted % 2 === 0) {
            held -= 1;
            await store.refund("key:reserve", now);
          } else {
            kept += 1;
          }
        }),
      );
      assert.ok(mostHeld <= 10, `at most 10 held at once, saw ${mostHeld}`);
      assert.ok(kept >= 5 && kept <= 10, `kept ${kept}`);
      let more = 0;
      while ((await store.consume("key:reserve", 10, now)).allowed) more += 1;
      assert.equal(kept + more, 10);
    });

    test("count reads a day's counter without counting", async () => {
      const now = at("2026-11-21T16:00:00Z");
      assert.equal(await store.count("key:counted", now), 0);
      await store.consume("key:counted", 5, now);
      await store.consume("key:counted", 5, now);
      assert.equal(await store.count("key:counted", now), 2);
      assert.equal(await store.count("key:counted", now), 2);
      await store.refund("key:counted", now);
      assert.equal(await store.count("key:counted", now), 1);
      // Refusals are not counted, and another day is another counter.
      await store.consume("key:counted", 1, now);
      assert.equal(await store.count("key:counted", now), 1);
      assert.equal(await store.count("key:counted", at("2026-11-22T16:00:00Z")), 0);
    });

    test("shares of a pool: a client over its share spends nothing of the pool", async () => {
      const now = at("2026-11-21T14:00:00Z");
      const charges = (client: string) => [
        { bucket: `share:${client}`, limit: 2 },
        { bucket: "pool:shared", limit: 3 },
      ];
      const first = await consumeAll(store, charges("a"), now);
      // The share has 1 left, the pool 2: the client is shown the bucket that refuses first.
      assert.deepEqual(first, {
        decision: { allowed: true, limit: 2, remaining: 1, resetSeconds: 36_000 },
        refusedBy: null,
        shownBy: 0,
      });
      assert.equal((await consumeAll(store, charges("a"), now)).refusedBy, null);
      for (let i = 0; i < 3; i += 1) {
        const over = await consumeAll(store, charges("a"), now);
        assert.equal(over.refusedBy, 0);
        assert.deepEqual(over.decision, {
          allowed: false,
          limit: 2,
          remaining: 0,
          resetSeconds: 36_000,
        });
      }
      // The pool counted only the two admitted: a second client still gets its one.
      const second = await consumeAll(store, charges("b"), now);
      assert.deepEqual(second, {
        decision: { allowed: true, limit: 3, remaining: 0, resetSeconds: 36_000 },
        refusedBy: null,
        // The pool, with fewer left than the share, is the one shown.
        shownBy: 1,
      });
      // The pool is the backstop: a third client is refused by it, and its share is given back.
      const third = await consumeAll(store, charges("c"), now);
      assert.equal(third.refusedBy, 1);
      assert.equal(third.decision.limit, 3);
      assert.deepEqual(await store.consume("share:c", 2, now), {
        allowed: true,
        limit: 2,
        remaining: 1,
        resetSeconds: 36_000,
      });
    });

    test("concurrent requests of many clients exceed neither a share nor the pool", async () => {
      const now = at("2026-11-21T15:00:00Z");
      const clients = ["p", "q", "r", "s"];
      const outcomes = await Promise.all(
        Array.from({ length: 80 }, (_, index) => {
          const client = clients[index % clients.length] as string;
          return consumeAll(
            store,
            [
              { bucket: `race-share:${client}`, limit: 6 },
              { bucket: "race-pool", limit: 15 },
            ],
            now,
          ).then((outcome) => ({ client, allowed: outcome.refusedBy === null }));
        }),
      );
      const admitted = outcomes.filter((outcome) => outcome.allowed);
      assert.ok(admitted.length <= 15, `pool of 15, admitted ${admitted.length}`);
      for (const client of clients) {
        const mine = admitted.filter((outcome) => outcome.client === client).length;
        assert.ok(mine <= 6, `share of 6, ${client} admitted ${mine}`);
      }
      // Every refused request gave its share back: the pool ends exactly at what was admitted.
      let more = 0;
      while ((await store.consume("race-pool", 15, now)).allowed) more += 1;
      assert.equal(admitted.length + more, 15);
    });

    test("an unusable cap is refused", async () => {
      for (const limit of [-1, 1.5, Number.NaN]) {
        await assert.rejects(
          store.consume("key:bad", limit, at("2026-11-21T10:00:00Z")),
          RangeError,
        );
      }
    });
  });
}
