/**
 * The one circuit breaker (src/io/circuit-breaker.ts) that Redis and PostgreSQL share: what
 * opens it, that nothing is run while it is open, the growing probe interval, recovery by
 * the probe alone (no request is the probe), and the log lines. Then each dependency's
 * policy: what counts as "not answered" and what a refused call throws.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type BreakerPolicy, CircuitBreaker } from "../../src/io/circuit-breaker.js";
import {
  isUnansweredCommand,
  RedisBreaker,
  RedisCircuitOpenError,
} from "../../src/redis/breaker.js";
import { DocumentStoreUnavailableError } from "../../src/storage/document-store.js";
import { isUnansweredQuery } from "../../src/storage/pg-document-store.js";

class Refused extends Error {
  constructor(readonly retryInMs: number) {
    super("refused");
  }
}

const policy: BreakerPolicy = {
  isUnanswered: (error) => error instanceof Error && error.message === "timed out",
  openError: (retryInMs) => new Refused(retryInMs),
  opened: (error) => `opened by ${(error as Error).message}`,
  closed: "closed again",
};

function harness() {
  const clock = { now: 0 };
  const lines: string[] = [];
  const probes: ((answered: boolean) => void)[] = [];
  const breaker = new CircuitBreaker(policy, {
    firstIntervalMs: 100,
    maxIntervalMs: 400,
    now: () => clock.now,
    log: { warn: (line) => lines.push(`warn ${line}`), info: (line) => lines.push(`info ${line}`) },
  });
  breaker.useProbe(() => new Promise<boolean>((resolve) => probes.push(resolve)));
  return { clock, lines, probes, breaker };
}

const timedOut = () => Promise.reject(new Error("timed out"));

describe("CircuitBreaker", () => {
  test("an answered error passes through and leaves it closed", async () => {
    const { breaker } = harness();
    await assert.rejects(
      breaker.run(() => Promise.reject(new Error("syntax"))),
      /syntax/,
    );
    assert.equal(breaker.state, "closed");
    assert.equal(await breaker.run(async () => 7), 7);
  });

  test("an unanswered call opens it; later calls are refused without running; only the probe closes it", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { clock, lines, probes, breaker } = harness();
    try {
      await assert.rejects(breaker.run(timedOut), /timed out/);
      assert.equal(breaker.state, "open");
      assert.equal(breaker.trips, 1);
      let ran = 0;
      clock.now = 40;
      await assert.rejects(
        breaker.run(async () => {
          ran += 1;
        }),
        (error: unknown) => error instanceof Refused && error.retryInMs === 60,
      );
      assert.equal(ran, 0, "nothing is run while open");

      // The first probe after 100 ms fails: the next comes after 200, then 400, then 400.
      for (const interval of [100, 200, 400, 400]) {
        assert.equal(probes.length, 0);
        t.mock.timers.tick(interval - 1);
        assert.equal(probes.length, 0, `no probe before ${interval} ms`);
        t.mock.timers.tick(1);
        assert.equal(probes.length, 1, `a probe after ${interval} ms`);
        clock.now += interval;
        probes.pop()?.(false);
        await settle();
        assert.equal(breaker.state, "open");
      }
      t.mock.timers.tick(400);
      probes.pop()?.(true);
      await settle();
      assert.equal(breaker.state, "closed");
      assert.equal(await breaker.run(async () => "sent"), "sent");
      assert.deepEqual(lines, ["warn opened by timed out", "info closed again"]);

      // A second opening starts again from the first interval.
      await assert.rejects(breaker.run(timedOut), /timed out/);
      assert.equal(breaker.trips, 2);
      t.mock.timers.tick(100);
      assert.equal(probes.length, 1);
    } finally {
      breaker.close();
    }
  });

  test("a reconnect closes it at once; a probe answering later changes nothing", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { probes, breaker } = harness();
    await assert.rejects(breaker.run(timedOut));
    breaker.connected();
    assert.equal(breaker.state, "closed");
    t.mock.timers.tick(1_000);
    assert.equal(probes.length, 0, "the probe timer was cancelled");
  });

  test("an opening the policy does not word is not logged, nor is its closing", async () => {
    const lines: string[] = [];
    const breaker = new CircuitBreaker(
      { ...policy, opened: () => null },
      { log: { warn: (line) => lines.push(line), info: (line) => lines.push(line) } },
    );
    await assert.rejects(breaker.run(timedOut));
    breaker.connected();
    breaker.close();
    assert.deepEqual(lines, []);
  });
});

describe("the dependencies' policies", () => {
  test("Redis: timeouts and lost connections open it; a refused command does not; refusals are RedisCircuitOpenError", async () => {
    assert.equal(isUnansweredCommand(new Error("Command timed out")), true);
    assert.equal(isUnansweredCommand(new Error("Connection is closed.")), true);
    assert.equal(isUnansweredCommand(new Error("OOM command not allowed")), false);
    assert.equal(isUnansweredCommand(new RedisCircuitOpenError(5)), false);
    const breaker = new RedisBreaker();
    await assert.rejects(breaker.run(() => Promise.reject(new Error("Command timed out"))));
    assert.throws(() => breaker.assertClosed(), RedisCircuitOpenError);
    breaker.close();
  });

  test("PostgreSQL: timeouts open it; refused or dropped connections and answered errors do not", () => {
    const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
    assert.equal(isUnansweredQuery(new Error("Query read timeout")), true);
    assert.equal(isUnansweredQuery(new Error("timeout exceeded when trying to connect")), true);
    assert.equal(
      isUnansweredQuery(new Error("Connection terminated due to connection timeout")),
      true,
    );
    assert.equal(isUnansweredQuery(withCode("connect ETIMEDOUT", "ETIMEDOUT")), true);
    assert.equal(
      isUnansweredQuery(
        new DocumentStoreUnavailableError("x", { cause: new Error("Query read timeout") }),
      ),
      false,
      "already translated",
    );
    assert.equal(isUnansweredQuery(withCode("connect ECONNREFUSED", "ECONNREFUSED")), false);
    assert.equal(isUnansweredQuery(new Error("Connection terminated unexpectedly")), false);
    assert.equal(isUnansweredQuery(withCode("canceling statement", "57014")), false);
    assert.equal(isUnansweredQuery(withCode("deadlock detected", "40P01")), false);
  });
});

/** Lets the probe's answer reach the breaker (a few microtask turns). */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn += 1) await Promise.resolve();
}
