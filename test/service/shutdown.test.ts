/**
 * Graceful shutdown (startServer): on SIGTERM the server stops accepting connections, answers
 * the request already in flight, then closes. The in-flight request is held in its worker by
 * a gate, so "in flight" does not depend on timing.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import { startServer } from "../../src/service/server.js";
import { corpusBytes } from "../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "./fixtures/verify-gate.js";
import { fixtureTaskModule, temporaryDataDir, testConfig } from "./support/service.js";

/** Resolves once `condition` holds, checking after each turn of the event loop. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe("graceful shutdown", () => {
  let dataDir: string;
  let gate: BroadcastChannel;
  before(async () => {
    dataDir = await temporaryDataDir();
    gate = new BroadcastChannel(GATE_CHANNEL);
  });
  after(async () => {
    gate.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test("SIGTERM drains the in-flight request, refuses new connections, then closes", {
    timeout: 30_000,
  }, async () => {
    const logLines: string[] = [];
    const app = await startServer(
      testConfig(dataDir, {
        port: 0,
        logLevel: "info",
        logDestination: { write: (line) => logLines.push(line) },
        cpuPool: { taskModules: { verify: fixtureTaskModule("gated-verify-worker") } },
      }),
    );
    const { port } = app.server.address() as AddressInfo;
    const { key } = await app.accessServices.keys.create({ name: "shutdown" });
    const base = `http://127.0.0.1:${port}`;

    const taskWaiting = new Promise<void>((resolve) => {
      gate.onmessage = (event) => {
        if ((event as MessageEvent).data === TASK_WAITING) resolve();
      };
    });
    const inFlight = fetch(`${base}/verify`, {
      method: "POST",
      headers: { "x-svc-key": key },
      body: corpusBytes("vectors/01_happy_minimal.json"),
    });
    await taskWaiting;

    process.emit("SIGTERM", "SIGTERM");
    await until(() => !app.server.listening);
    await assert.rejects(fetch(`${base}/health`));

    gate.postMessage(GATE_OPEN);
    const response = await inFlight;
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { verdict: string }).verdict, "TRUSTED");

    await until(() => logLines.some((line) => line.includes('"msg":"shut down"')));
    assert.equal(process.listenerCount("SIGTERM"), 0);
    assert.equal(process.listenerCount("SIGINT"), 0);
  });
});
