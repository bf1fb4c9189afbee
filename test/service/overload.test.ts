/**
 * Saturation (service.md §0): with one thread and one queue slot, a third concurrent request
 * is shed with 503. The task module holds every task until the test opens its gate, so which
 * requests are running, queued and refused does not depend on timing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import { corpusBytes } from "../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "./fixtures/verify-gate.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");

describe("a full CPU pool queue", () => {
  let service: TestService;
  let gate: BroadcastChannel;
  let gateOpen = false;
  before(async () => {
    gate = new BroadcastChannel(GATE_CHANNEL);
    // A task that starts after the gate opened asks while it is open: let it through too.
    gate.onmessage = (event) => {
      if (gateOpen && (event as MessageEvent).data === TASK_WAITING) gate.postMessage(GATE_OPEN);
    };
    service = await startTestService({
      cpuPool: {
        threads: 1,
        maxQueue: 1,
        taskModules: { verify: fixtureTaskModule("gated-verify-worker") },
      },
    });
  });
  after(async () => {
    gate.close();
    await service.close();
  });

  test("→ 503 overloaded with Retry-After: 1; the admitted requests complete", {
    timeout: 30_000,
  }, async () => {
    const responses = [1, 2, 3].map(() =>
      service.app.inject({ method: "POST", url: "/verify", payload: BUNDLE }),
    );
    // One request holds the thread and one the queue slot, neither can finish while the gate
    // is shut, so the first answer is necessarily the refused one.
    const refused = await Promise.race(responses);
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.headers["retry-after"], "1");
    assert.equal(refused.headers["content-type"], "application/json; charset=utf-8");
    assert.ok(refused.headers["x-request-id"]);
    assert.deepEqual(refused.json(), { error: "overloaded" });

    gateOpen = true;
    gate.postMessage(GATE_OPEN);
    const statuses = (await Promise.all(responses)).map((response) => response.statusCode);
    assert.deepEqual(statuses.sort(), [200, 200, 503]);
  });
});
