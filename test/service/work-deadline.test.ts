/**
 * Every CPU task has a deadline and is abandoned when its client leaves (issue 22), over real
 * sockets. A worker module that spins forever, synchronously, when asked (the shape of a
 * decoding bomb) holds the only thread: past the deadline the request is answered 503
 * `work_limit_exceeded` and the thread is replaced; a client that hangs up frees the thread
 * without any deadline. Then the real verifier meets a did:key bomb.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import { corpusBytes } from "../support/corpus.js";
import { SPIN_CHANNEL, SPIN_MARKER, SPINNING } from "./fixtures/spin-signal.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

/** Listens on an ephemeral port; the base URL. */
async function listen(service: TestService): Promise<string> {
  await service.app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = service.app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function verifyHonestly(base: string, service: TestService): Promise<string> {
  const response = await fetch(`${base}/verify`, {
    method: "POST",
    headers: { ...service.authHeaders, "content-type": "application/json" },
    body: corpusBytes("vectors/01_happy_minimal.json"),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { verdict: string }).verdict;
}

/** Resolves when the spinning module reports that a task started spinning. */
function nextSpin(): { started: Promise<void>; close(): void } {
  const channel = new BroadcastChannel(SPIN_CHANNEL);
  const started = new Promise<void>((resolve) => {
    channel.onmessage = (event) => {
      if ((event as MessageEvent).data === SPINNING) resolve();
    };
  });
  return { started, close: () => channel.close() };
}

describe("CPU task deadline", () => {
  const deadlineMs = 3000;
  let service: TestService;
  let base: string;
  before(async () => {
    service = await startTestService({
      cpuPool: {
        taskDeadlineMs: deadlineMs,
        taskModules: { verify: fixtureTaskModule("spinning-verify-worker") },
      },
    });
    base = await listen(service);
  });
  after(() => service.close());

  test("/info publishes the deadline", async () => {
    const info = (await (await fetch(`${base}/info`)).json()) as {
      limits: { cpu_task_deadline_ms: number };
    };
    assert.equal(info.limits.cpu_task_deadline_ms, deadlineMs);
  });

  test("a task past the deadline is refused 503 work_limit_exceeded and its thread replaced", {
    timeout: 60_000,
  }, async () => {
    const response = await fetch(`${base}/verify`, {
      method: "POST",
      headers: { ...service.authHeaders, "content-type": "application/json" },
      body: SPIN_MARKER,
    });
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), { error: "work_limit_exceeded", limit: deadlineMs });
    // The only thread spun forever: an answer now comes from the one that replaced it.
    assert.equal(await verifyHonestly(base, service), "TRUSTED");
    assert.equal(service.app.cpuPool.stats().threads, 1);
    assert.deepEqual(service.app.cpuPool.stats().abandonedTasks, { deadline: 1, clientGone: 0 });
  });
});

describe("a client that hangs up", () => {
  let service: TestService;
  let base: string;
  before(async () => {
    service = await startTestService({
      cpuPool: {
        // No deadline in reach: only the hang-up can free the thread.
        taskDeadlineMs: 3_600_000,
        taskModules: { verify: fixtureTaskModule("spinning-verify-worker") },
      },
    });
    base = await listen(service);
  });
  after(() => service.close());

  test("frees the thread its running task held", { timeout: 60_000 }, async () => {
    const spin = nextSpin();
    const { port } = service.app.server.address() as AddressInfo;
    const hungUp = new Promise<void>((resolve) => {
      const client = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/verify",
        agent: false,
        headers: { ...service.authHeaders, "content-type": "application/json" },
      });
      client.on("error", () => resolve());
      client.on("close", () => resolve());
      client.end(SPIN_MARKER);
      void spin.started.then(() => client.destroy());
    });
    await spin.started;
    spin.close();
    await hungUp;
    // The honest request waits behind the spinning task until the hang-up stops it.
    assert.equal(await verifyHonestly(base, service), "TRUSTED");
    assert.equal(service.app.cpuPool.stats().abandonedTasks.clientGone, 1);
  });

  test("a task still waiting for the thread never runs once its client left", {
    timeout: 60_000,
  }, async () => {
    const spin = nextSpin();
    const spinner = new AbortController();
    const spinning = fetch(`${base}/verify`, {
      method: "POST",
      headers: { ...service.authHeaders, "content-type": "application/json" },
      body: SPIN_MARKER,
      signal: spinner.signal,
    }).catch(() => null);
    await spin.started;
    spin.close();
    // A second spinning task queues behind the first; its client leaves while it waits.
    const queued = new AbortController();
    const waiting = fetch(`${base}/verify`, {
      method: "POST",
      headers: { ...service.authHeaders, "content-type": "application/json" },
      body: SPIN_MARKER,
      signal: queued.signal,
    }).catch(() => null);
    while (service.app.cpuPool.stats().queueSize === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    queued.abort();
    await waiting;
    while (service.app.cpuPool.stats().queueSize !== 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    spinner.abort();
    await spinning;
    // Had the queued spinner run, it would hold the thread now, for an hour.
    assert.equal(await verifyHonestly(base, service), "TRUSTED");
  });
});

describe("a did:key bomb meets the real verifier", () => {
  let service: TestService;
  let base: string;
  before(async () => {
    service = await startTestService();
    base = await listen(service);
  });
  after(() => service.close());

  test("a 1 MB body of did:key digits is answered, and the key is not a key", {
    timeout: 60_000,
  }, async () => {
    const bundle = JSON.parse(corpusBytes("vectors/01_happy_minimal.json").toString("utf8")) as {
      receipts: { issuer: { id: string }; sig: { key: string } }[];
    };
    const bomb = `did:key:z${"z".repeat(500 * 1000)}`;
    bundle.receipts[0]!.issuer.id = bomb;
    bundle.receipts[0]!.sig.key = bomb;
    const response = await fetch(`${base}/verify`, {
      method: "POST",
      headers: { ...service.authHeaders, "content-type": "application/json" },
      body: JSON.stringify(bundle),
    });
    assert.equal(response.status, 200);
    const answer = (await response.json()) as { verdict: string };
    assert.equal(answer.verdict, "UNTRUSTED");
    assert.equal(await verifyHonestly(base, service), "TRUSTED");
  });
});
