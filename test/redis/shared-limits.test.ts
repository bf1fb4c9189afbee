/**
 * The limits that hold per client across the deployment (issue 34, finding 6): the x402
 * signature share per address and the crystal upload slots per principal. One contract for
 * both implementations of each (in the process, in Redis); then what only Redis has: two
 * processes' instances sharing one bucket, keys in one Cluster slot, leaked slots expiring,
 * and failing open to the process while the circuit breaker is open.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { InProcessUploadSlots, type UploadSlots } from "../../src/access/upload-slots.js";
import {
  InProcessSignatureChecks,
  SignatureBudget,
  type SignatureChecks,
} from "../../src/payments/signature-budget.js";
import type { RedisConnection } from "../../src/redis/connection.js";
import { RedisSignatureChecks } from "../../src/redis/redis-signature-budget.js";
import { RedisUploadSlots } from "../../src/redis/redis-upload-slots.js";
import { disposeTestRedis, openTestRedis } from "./support.js";

const T0 = 1_800_000_000_000;

interface Clock {
  now: number;
}

const budgetOf = (clock: Clock, perClient: number, total = 1_000_000) =>
  new SignatureBudget({
    perClientPerSecond: perClient,
    totalPerSecond: total,
    now: () => clock.now,
  });

async function takes(checks: SignatureChecks, client: string, count: number) {
  const decisions = [];
  for (let index = 0; index < count; index += 1) decisions.push(await checks.take(client));
  return decisions;
}

/** The assertion of the Redis script's hash tag: one key, one slot, its tag in braces. */
function assertHashTagged(key: string, prefix: string, kind: string): void {
  assert.ok(key.startsWith(`${prefix}${kind}:{`), key);
  assert.match(key, /\{[0-9a-f]{32}\}$/);
}

let redis: RedisConnection;
before(async () => {
  redis = await openTestRedis();
});
after(async () => {
  await disposeTestRedis(redis);
});

const signatureMakers: [
  string,
  (clock: Clock, perClient: number, total?: number) => SignatureChecks,
][] = [
  [
    "in the process",
    (clock, perClient, total) => new InProcessSignatureChecks(budgetOf(clock, perClient, total)),
  ],
  [
    "in Redis",
    (clock, perClient, total) =>
      new RedisSignatureChecks(redis, budgetOf(clock, perClient, total), () => clock.now),
  ],
];

for (const [name, make] of signatureMakers) {
  describe(`signature checks per client (${name})`, () => {
    test("a client bursts to twice its rate, then earns its rate back", async () => {
      const clock = { now: T0 };
      const checks = make(clock, 2);
      const client = `burst-${name.length}-${Math.random()}`.replace(/\W/g, "");
      assert.deepEqual(await takes(checks, client, 5), [
        "granted",
        "granted",
        "granted",
        "granted",
        "client",
      ]);
      clock.now += 500;
      assert.deepEqual(await takes(checks, client, 2), ["granted", "client"]);
      clock.now += 60_000;
      const refilled = await takes(checks, client, 6);
      assert.equal(refilled.filter((taken) => taken === "granted").length, 4);
    });

    test("the process's share refuses first and costs the client nothing", async () => {
      const clock = { now: T0 };
      const checks = make(clock, 5, 2);
      const client = `total-${name.length}`;
      assert.deepEqual(await takes(checks, client, 3), ["granted", "granted", "total"]);
      clock.now += 1_000;
      // Two more from the process's refill; the client had five and spent two.
      assert.deepEqual(await takes(checks, client, 3), ["granted", "granted", "total"]);
    });

    test("one client's flood leaves another its share", async () => {
      const clock = { now: T0 };
      const checks = make(clock, 1);
      const flood = await takes(checks, `flood-${name.length}`, 50);
      assert.equal(flood.filter((taken) => taken === "granted").length, 2);
      assert.deepEqual(await takes(checks, `honest-${name.length}`, 2), ["granted", "granted"]);
    });
  });
}

describe("signature checks in Redis", () => {
  test("two processes' instances share one bucket per client, under a hash-tagged key", async () => {
    const clock = { now: T0 };
    const first = new RedisSignatureChecks(redis, budgetOf(clock, 10), () => clock.now);
    const second = new RedisSignatureChecks(redis, budgetOf(clock, 10), () => clock.now);
    const client = "0123456789abcdef0123456789abcdef";
    const decisions = [];
    for (let index = 0; index < 30; index += 1) {
      decisions.push(await (index % 2 === 0 ? first : second).take(client));
    }
    // 20 is one burst (twice the rate), not two.
    assert.equal(decisions.filter((taken) => taken === "granted").length, 20);
    const key = first.key(client);
    assertHashTagged(key, redis.prefix, "sigbudget");
    const ttl = await redis.client.pttl(key);
    assert.ok(ttl > 0 && ttl <= 3_000, `expires once full again (${ttl} ms)`);
  });

  test("a web whose clock lags adds no tokens, and time going backwards refills nothing", async () => {
    const clock = { now: T0 };
    const lagging = { now: T0 - 5_000 };
    const ahead = new RedisSignatureChecks(redis, budgetOf(clock, 1), () => clock.now);
    const behind = new RedisSignatureChecks(redis, budgetOf(lagging, 1), () => lagging.now);
    const client = "fedcba9876543210fedcba9876543210";
    assert.deepEqual(await takes(ahead, client, 2), ["granted", "granted"]);
    assert.deepEqual(await takes(behind, client, 2), ["client", "client"]);
    lagging.now += 4_000;
    assert.equal(await behind.take(client), "client");
  });

  test("fails open to the process's bucket while the breaker is open, and back once it closes", async () => {
    const clock = { now: T0 };
    const checks = new RedisSignatureChecks(redis, budgetOf(clock, 1), () => clock.now);
    const client = "00112233445566778899aabbccddeeff";
    assert.deepEqual(await takes(checks, client, 3), ["granted", "granted", "client"]);
    redis.breaker.trip(new Error("Command timed out"));
    try {
      // The process's own bucket for the client: a full burst, and still a bound.
      assert.deepEqual(await takes(checks, client, 3), ["granted", "granted", "client"]);
    } finally {
      redis.breaker.connected();
    }
    assert.equal(await checks.take(client), "client", "the shared bucket again, still empty");
  });
});

const uploadMakers: [string, (limit: number, clock: Clock) => UploadSlots][] = [
  ["in the process", (limit) => new InProcessUploadSlots(limit)],
  [
    "in Redis",
    (limit, clock) =>
      new RedisUploadSlots(redis, {
        slotTtlMs: 60_000,
        fallback: new InProcessUploadSlots(limit),
        now: () => clock.now,
      }),
  ],
];

for (const [name, make] of uploadMakers) {
  describe(`upload slots per principal (${name})`, () => {
    test("at most the limit at once; a release makes room; a second release is nothing", async () => {
      const slots = make(2, { now: T0 });
      const principal = `key:uploads-${name.length}`;
      const first = await slots.acquire(principal);
      const second = await slots.acquire(principal);
      assert.ok(first !== null && second !== null);
      assert.equal(await slots.acquire(principal), null);
      assert.ok((await slots.acquire(`${principal}-other`)) !== null, "another principal");
      first.release();
      first.release();
      await settle();
      const third = await slots.acquire(principal);
      assert.ok(third !== null);
      assert.equal(await slots.acquire(principal), null, "a double release freed one slot");
    });
  });
}

describe("upload slots in Redis", () => {
  test("two processes' instances hold one principal to one limit", async () => {
    const clock = { now: T0 };
    const make = () =>
      new RedisUploadSlots(redis, {
        slotTtlMs: 60_000,
        fallback: new InProcessUploadSlots(4),
        now: () => clock.now,
      });
    const [first, second] = [make(), make()];
    const held = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        (index % 2 === 0 ? first : second).acquire("key:shared"),
      ),
    );
    assert.equal(held.filter((slot) => slot !== null).length, 4);
    const key = first.key("key:shared");
    assertHashTagged(key, redis.prefix, "uploads");
    assert.equal(await redis.client.zcard(key), 4);
    for (const slot of held) slot?.release();
    await settle();
    assert.equal(await redis.client.exists(key), 0, "the set goes with its last slot");
  });

  test("a slot never released (its web killed) is dropped once its own expiry passes", async () => {
    const clock = { now: T0 };
    const slots = new RedisUploadSlots(redis, {
      slotTtlMs: 60_000,
      fallback: new InProcessUploadSlots(1),
      now: () => clock.now,
    });
    assert.ok((await slots.acquire("key:leak")) !== null);
    clock.now += 30_000;
    assert.equal(await slots.acquire("key:leak"), null);
    clock.now += 30_001;
    assert.ok((await slots.acquire("key:leak")) !== null, "the leaked slot expired");
    const ttl = await redis.client.pttl(slots.key("key:leak"));
    assert.ok(ttl > 0 && ttl <= 60_000, `the set expires with its last slot (${ttl} ms)`);
  });

  test("counts in the process while the breaker is open; a release goes where the slot came from", async () => {
    const clock = { now: T0 };
    const fallback = new InProcessUploadSlots(1);
    const slots = new RedisUploadSlots(redis, {
      slotTtlMs: 60_000,
      fallback,
      now: () => clock.now,
    });
    const shared = await slots.acquire("key:open");
    assert.ok(shared !== null);
    redis.breaker.trip(new Error("Command timed out"));
    let local: Awaited<ReturnType<UploadSlots["acquire"]>>;
    try {
      local = await slots.acquire("key:open");
      assert.ok(local !== null, "the process's own count admits it");
      assert.equal(fallback.heldBy("key:open"), 1);
      assert.equal(await slots.acquire("key:open"), null, "and still bounds it");
      local.release();
      assert.equal(fallback.heldBy("key:open"), 0);
    } finally {
      redis.breaker.connected();
    }
    assert.equal(await redis.client.zcard(slots.key("key:open")), 1, "the Redis slot is untouched");
    shared.release();
    await settle();
    assert.equal(await redis.client.exists(slots.key("key:open")), 0);
  });
});

/** Lets fire-and-forget releases reach Redis (one round trip on a local socket). */
async function settle(): Promise<void> {
  await redis.client.ping();
}
