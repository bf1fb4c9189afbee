/**
 * The fair CPU pool over real sockets (issue 32): one key floods the two threads with long
 * tasks, another key's request is served by the first thread to free, not behind the flood's
 * queue. Tasks report their start and are held until the test releases them
 * (fixtures/held-verify-worker.ts): the assertions are about order and counts, never time.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { corpusBytes } from "../support/corpus.js";
import { labelledBody } from "./fixtures/held-signal.js";
import { heldTasks } from "./fixtures/held-tasks.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");
const FLOOD = 6;

describe("a key flooding the CPU pool", () => {
  let service: TestService;
  let base: string;
  let honestKey: string;
  before(async () => {
    service = await startTestService({
      cpuPool: { threads: 2, taskModules: { verify: fixtureTaskModule("held-verify-worker") } },
    });
    honestKey = (await service.app.accessServices.keys.create({ name: "honest", dailyCap: 100 }))
      .key;
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = service.app.server.address() as AddressInfo;
    base = `http://127.0.0.1:${port}`;
  });
  after(() => service.close());

  /** Resolves once the pool's queue holds `size` tasks of `principals` principals. */
  async function queued(size: number, principals: number): Promise<void> {
    for (;;) {
      const stats = service.app.cpuPool.stats();
      if (stats.queueSize === size && stats.principalsWaiting === principals) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  const verify = (headers: Record<string, string>, body: Buffer) =>
    fetch(`${base}/verify`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body,
    });

  test("another key's request waits for one of its tasks, not for its queue", {
    timeout: 60_000,
  }, async () => {
    const tasks = heldTasks();
    try {
      let floodAnswered = 0;
      const flood = Array.from({ length: FLOOD }, (_, i) =>
        verify(service.authHeaders, labelledBody("HOLD", `f${i}`, BUNDLE)).then((response) => {
          floodAnswered++;
          return response;
        }),
      );
      await tasks.startedCount(2);
      await queued(FLOOD - 2, 1);
      const honest = verify({ "x-svc-key": honestKey }, labelledBody("TAG", "honest", BUNDLE));
      await queued(FLOOD - 1, 2);

      tasks.release(tasks.started[0]!);
      const answer = await honest;
      assert.equal(answer.status, 200);
      assert.equal(((await answer.json()) as { verdict: string }).verdict, "TRUSTED");
      // At most the one released flood task has answered; four more still wait.
      assert.ok(floodAnswered <= 1, `${floodAnswered} flood answers`);
      await tasks.startedCount(3);
      assert.equal(tasks.started[2], "honest");

      for (let started = 3; started <= FLOOD; started++) {
        for (const label of tasks.started) tasks.release(label);
        await tasks.startedCount(started + 1);
      }
      for (const label of tasks.started) tasks.release(label);
      const statuses = (await Promise.all(flood)).map((response) => response.status);
      assert.deepEqual(statuses, Array(FLOOD).fill(200));
    } finally {
      tasks.close();
    }
  });
});
