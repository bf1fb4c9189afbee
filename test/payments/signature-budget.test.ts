/** The signature-check shares of x402 payments: per client, for the process, in memory. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SignatureBudget } from "../../src/payments/signature-budget.js";

function budget(perClientPerSecond: number, totalPerSecond: number, maxClients?: number) {
  const clock = { now: 1_000 };
  const shares = new SignatureBudget({
    perClientPerSecond,
    totalPerSecond,
    now: () => clock.now,
    ...(maxClients === undefined ? {} : { maxClients }),
  });
  return { clock, shares };
}

const takes = (shares: SignatureBudget, client: string, count: number) =>
  Array.from({ length: count }, () => shares.take(client));

describe("SignatureBudget", () => {
  test("a client bursts to twice its rate, then gets its rate back as time passes", () => {
    const { clock, shares } = budget(2, 1000);
    assert.deepEqual(takes(shares, "a", 5), ["granted", "granted", "granted", "granted", "client"]);
    clock.now += 500;
    assert.deepEqual(takes(shares, "a", 2), ["granted", "client"]);
    clock.now += 10_000;
    assert.equal(takes(shares, "a", 5).filter((taken) => taken === "granted").length, 4);
  });

  test("one client's flood leaves another client its share", () => {
    const { shares } = budget(1, 1000);
    const flood = takes(shares, "attacker", 500);
    assert.equal(flood.filter((taken) => taken === "granted").length, 2);
    assert.deepEqual(takes(shares, "honest", 2), ["granted", "granted"]);
  });

  test("the process's share bounds all clients together; a refusal there costs the client nothing", () => {
    const { clock, shares } = budget(5, 3);
    assert.deepEqual(
      ["a", "b", "c", "d"].map((client) => shares.take(client)),
      ["granted", "granted", "granted", "total"],
    );
    clock.now += 1000;
    // d was refused by the process, not by its own share: it still has its whole burst.
    assert.deepEqual(takes(shares, "d", 4), ["granted", "granted", "granted", "total"]);
  });

  test("idle clients are forgotten; active ones past the limit share one bucket", () => {
    const { clock, shares } = budget(1, 1_000_000, 3);
    for (const client of ["a", "b", "c"]) shares.take(client);
    assert.equal(shares.size, 3);
    clock.now += 60_000;
    shares.take("d");
    // a, b and c had refilled: forgetting them loses nothing.
    assert.equal(shares.size, 1);
    for (const client of ["e", "f"]) shares.take(client);
    // Full of active clients: newcomers share the overflow bucket (burst 2 between them).
    assert.deepEqual(
      ["g", "h", "i"].map((client) => shares.take(client)),
      ["granted", "granted", "client"],
    );
    assert.ok(shares.size <= 4);
  });

  test("a rate must be positive", () => {
    for (const [perClientPerSecond, totalPerSecond] of [
      [0, 10],
      [10, 0],
      [Number.NaN, 1],
    ] as const) {
      assert.throws(() => new SignatureBudget({ perClientPerSecond, totalPerSecond }), RangeError);
    }
  });
});
