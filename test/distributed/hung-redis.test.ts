/**
 * A hung Redis (a private redis-server stopped with SIGSTOP, never the shared one) under a
 * distributed instance and a queue worker, over a real socket. What the client is told must be
 * what happened (issue 34, finding 1):
 * - no write hangs: each answers within the producer's command timeout (issue 24, finding 2);
 * - a write whose add was sent but not answered may still run when Redis resumes, so it is
 *   answered 202 with its status URL, and it is stored once Redis is back (which of the first
 *   writes' commands meets the stall first, the cap's or the add, is up to timing; the
 *   queue's own test, test/queues/bullmq-queue.test.ts, pins the add case);
 * - after that first timeout the circuit is open: later writes get a fast 503, having sent
 *   nothing, and are never stored, even after Redis resumes and the worker drains;
 * - the anchor quota charged equals the anchor bytes stored (a 503 gives its charge back, a
 *   202 keeps it).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { PRODUCER_COMMAND_TIMEOUT_MS } from "../../queues/bullmq-queue.js";
import { startReceiptdWorkers } from "../../queues/bullmq-worker.js";
import { ServiceIdentity } from "../../src/service/service-key.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import { readUsage } from "../../src/storage/usage.js";
import { settlementFields } from "../payments/support.js";
import { keysUnder, type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";
import { type RedisProxy, startRedisProxy } from "../support/redis-proxy.js";

/** The bound the answers must meet: the command timeout plus generous slack for a busy CI. */
const BOUND_MS = PRODUCER_COMMAND_TIMEOUT_MS + 4_000;
/** How long the stored writes may take to appear once Redis is back (worker retries included). */
const DRAIN_MS = 30_000;

interface Write {
  label: string;
  /** Where the document is read back. */
  readUrl: string;
  isAnchor: boolean;
  /** The digest's or the transaction's hex: the job id is `anchor-<hex>-…` or `settlement-<hex>`. */
  hex: string;
  status: number;
  error: string | undefined;
  elapsedMs: number;
}

interface Writer {
  anchor(label: string): Promise<Write>;
  receipt(label: string): Promise<Write>;
  isStored(write: Write): Promise<boolean>;
}

/** Posts anchors and settlement receipts to `base`, and reads them back. */
function writer(base: string, service: TestService, token: string): Writer {
  async function anchor(label: string): Promise<Write> {
    const digest = sha256(label);
    const proof = pendingProof(digest);
    const started = Date.now();
    const answer = await fetch(`${base}/anchors`, {
      method: "POST",
      headers: { "content-type": "application/json", ...service.authHeaders },
      body: JSON.stringify({
        digest: `sha256:${digest.toString("hex")}`,
        proof: proof.toString("base64"),
      }),
    });
    const body = (await answer.json()) as { error?: string };
    return {
      label,
      readUrl: `/anchors/sha256:${digest.toString("hex")}`,
      isAnchor: true,
      hex: digest.toString("hex"),
      status: answer.status,
      error: body.error,
      elapsedMs: Date.now() - started,
    };
  }

  async function receipt(label: string): Promise<Write> {
    const tx = `0x${sha256(label).toString("hex")}`;
    const started = Date.now();
    const answer = await fetch(`${base}/payment-receipts`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-internal-token": token },
      body: JSON.stringify(settlementFields(tx)),
    });
    const body = (await answer.json()) as { error?: string };
    return {
      label,
      readUrl: `/receipts/${tx}`,
      isAnchor: false,
      hex: tx.slice(2),
      status: answer.status,
      error: body.error,
      elapsedMs: Date.now() - started,
    };
  }

  const isStored = async (write: Write) =>
    (await fetch(`${base}${write.readUrl}`, { headers: service.authHeaders })).status === 200;
  return { anchor, receipt, isStored };
}

/** The bytes of the stored anchor `write`, as its read answers them. */
async function storedBytes(base: string, service: TestService, write: Write): Promise<number> {
  const document = await fetch(`${base}${write.readUrl}`, { headers: service.authHeaders });
  return (await document.arrayBuffer()).byteLength;
}

/** The anchor bytes charged to the service's own key. */
async function anchorUsage(service: TestService): Promise<number> {
  const principal = `key:${(await service.app.accessServices.keys.list())[0]?.id}`;
  return readUsage(service.app.documentStore, "anchors", "principal", principal);
}

interface Stack {
  service: TestService;
  base: string;
  writer: Writer;
  close(): Promise<void>;
}

/**
 * A listening distributed web on `webRedisUrl` and the queue workers on `workerRedisUrl` (the
 * same Redis, perhaps through a proxy), sharing a document store. `afterStore` is called each
 * time a worker has created a document (the step "after the worker's store").
 */
async function startStack(
  webRedisUrl: string,
  workerRedisUrl: string,
  afterStore: (collection: string, id: string) => void = () => {},
): Promise<Stack> {
  const prefix = randomPrefix();
  const service = await startTestService({ redisUrl: webRedisUrl, redisPrefix: prefix });
  await service.app.listen({ port: 0, host: "127.0.0.1" });
  const base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
  const token = await readFile(service.config.internalTokenFile, "utf8");
  const workerStore = await openDocumentStore(service.config);
  // Every method runs on the store itself (its private state); `create` then calls the hook.
  const hooked = new Proxy(workerStore, {
    get(target, name) {
      const member: unknown = Reflect.get(target, name, target);
      if (typeof member !== "function") return member;
      if (name !== "create") return member.bind(target);
      return async (...args: Parameters<DocumentStore["create"]>) => {
        const created = await target.create(...args);
        afterStore(args[0], args[1]);
        return created;
      };
    },
  });
  const identity = ServiceIdentity.open(service.config.dataDir);
  const workers = startReceiptdWorkers({
    redis: workerRedisUrl,
    prefix,
    store: hooked,
    signer: () => identity.signer(),
    log: { info() {}, warn() {}, error() {} },
  });
  await Promise.all(workers.map((worker) => worker.ready()));
  return {
    service,
    base,
    writer: writer(base, service, token),
    async close() {
      for (const worker of workers) await worker.close(5_000);
      await workerStore.close();
      await service.close();
    },
  };
}

describe("a hung Redis under the queued writes: the answer is what happened", () => {
  let redis: PrivateRedis;
  let stack: Stack;
  let service: TestService;
  let anchor: Writer["anchor"];
  let receipt: Writer["receipt"];
  let isStored: Writer["isStored"];

  before(async () => {
    redis = await startPrivateRedis();
    stack = await startStack(redis.url, redis.url);
    ({ service } = stack);
    ({ anchor, receipt, isStored } = stack.writer);
  });
  after(async () => {
    redis.resume();
    await stack.close();
    await redis.stop();
  });

  test("every 503 is never stored, every 202 is stored, and usage is what is stored", async () => {
    const healthy = await anchor("before the hang");
    assert.equal(healthy.status, 200, JSON.stringify(healthy));

    redis.pause();
    // The first Redis command of these writes times out (the cap, or the add) and opens the
    // circuit: each answers 503 if nothing was sent, or 202 if its add was sent.
    const first = await Promise.all([
      anchor("during the hang 1"),
      anchor("during the hang 2"),
      receipt("during the hang 3"),
    ]);
    // The circuit is open now: these are refused before anything is sent.
    const refused = await Promise.all([anchor("while open 1"), receipt("while open 2")]);
    const health = await fetch(`${stack.base}/health`);
    const healthBody = (await health.json()) as { redis?: string };
    redis.resume();

    const writes = [...first, ...refused];
    for (const write of writes) {
      assert.ok(write.elapsedMs < BOUND_MS, `${write.label} answered after ${write.elapsedMs} ms`);
      assert.ok([202, 503].includes(write.status), JSON.stringify(write));
    }
    assert.deepEqual(
      refused.map((write) => [write.status, write.error]),
      [
        [503, "anchor_store_unavailable"],
        [503, "settlement_store_unavailable"],
      ],
    );
    assert.equal(healthBody.redis, "down");

    // Every 202 is stored once Redis is back and the worker has caught up.
    const deadline = Date.now() + DRAIN_MS;
    const accepted = writes.filter((write) => write.status === 202);
    for (const write of accepted) {
      while (!(await isStored(write))) {
        assert.ok(Date.now() < deadline, `${write.label} (202) was never stored`);
        await sleep(200);
      }
    }
    // A write after the recovery goes through as before, behind anything still queued.
    let later = await anchor("after the hang");
    while (later.status === 503 && Date.now() < deadline) {
      await sleep(200);
      later = await anchor("after the hang");
    }
    assert.equal(later.status, 200, JSON.stringify(later));
    // So the worker has drained what the stall left queued: a 503 is still not stored.
    for (const write of writes.filter((each) => each.status === 503)) {
      assert.equal(await isStored(write), false, `${write.label} (503) was stored`);
    }

    // The quota charged is exactly the anchor bytes stored (settlement receipts charge none).
    let stored = 0;
    for (const write of [healthy, ...accepted, later].filter((each) => each.isAnchor)) {
      stored += await storedBytes(stack.base, service, write);
    }
    assert.equal(await anchorUsage(service), stored);
  });
});

/**
 * The same guarantee at each step of a write, made deterministic: the web reaches Redis through
 * a proxy (test/support/redis-proxy.ts) that holds the bytes from an exact command on, while the
 * test stops Redis (SIGSTOP) and lets the held bytes into its socket; the worker talks to Redis
 * directly and stops it right after its store. Each step, for an anchor and a settlement
 * receipt:
 * - before the enqueue: the queue budget's admission is sent and not answered, so no add
 *   follows: 503, never stored, even after Redis resumes and runs the admission;
 * - after the enqueue: the add itself sits in the stopped Redis's socket (the report's
 *   "503, then stored anyway"): 202, and stored once Redis resumes;
 * - after the worker's store: the document is written, its completion is not: 202, stored.
 * While the circuit is open a write fails having sent nothing (the breaker's fast failure, in
 * bytes rather than milliseconds) and reads that do not need Redis answer; it closes by
 * itself once Redis answers. A slow Redis (every byte late, through the same proxy) slows the
 * writes but tells no lie either. The anchor quota charged is the anchor bytes stored.
 */
describe("a hung Redis at each step of a write, through a holding proxy", () => {
  let redis: PrivateRedis;
  let proxy: RedisProxy;
  let stack: Stack;
  let writer: Writer;
  /** The hex of the write whose store stops Redis, and what to tell when it has. */
  let stopAfterStore: { hex: string; stopped: () => void } | undefined;
  const writes: Write[] = [];

  before(async () => {
    redis = await startPrivateRedis();
    proxy = await startRedisProxy(redis.port);
    stack = await startStack(proxy.url, redis.url, (_collection, id) => {
      if (stopAfterStore !== undefined && id.includes(stopAfterStore.hex)) {
        redis.pause();
        stopAfterStore.stopped();
        stopAfterStore = undefined;
      }
    });
    writer = stack.writer;
  });
  after(async () => {
    proxy.release();
    redis.resume();
    await stack.close();
    await proxy.close();
    await redis.stop();
  });

  /** Waits until the web's circuit is closed and a write of each queue goes through again. */
  async function recovered(): Promise<void> {
    const deadline = Date.now() + DRAIN_MS;
    for (const post of [writer.anchor, writer.receipt]) {
      for (let n = 0; ; n += 1) {
        const write = await post(`recovery ${writes.length} ${n}`);
        if (write.status === 200) {
          writes.push(write);
          break;
        }
        assert.ok(Date.now() < deadline, `no write went through again: ${JSON.stringify(write)}`);
        await sleep(200);
      }
    }
  }

  /**
   * Posts `label`; when the web sends the chunk holding `marker`, stops Redis and lets the held
   * bytes into its socket; resumes Redis once the write is answered.
   */
  async function stalledAt(
    post: (label: string) => Promise<Write>,
    label: string,
    marker: (hex: string) => string,
  ): Promise<Write> {
    const hex = sha256(label).toString("hex");
    const held = proxy.holdFrom(marker(hex));
    const answer = post(label);
    await held;
    redis.pause();
    proxy.release();
    const write = await answer;
    // The circuit is open now: a write fails having sent nothing, reads carry on.
    proxy.mark();
    const refused = await post(`${label}, while open`);
    assert.equal(refused.status, 503, JSON.stringify(refused));
    assert.equal(proxy.sentSinceMark(refused.hex), false, "a write was sent with the circuit open");
    writes.push(refused);
    const info = await fetch(`${stack.base}/info`, { headers: stack.service.authHeaders });
    assert.equal(info.status, 200);
    const health = (await (await fetch(`${stack.base}/health`)).json()) as { redis?: string };
    assert.equal(health.redis, "down");
    redis.resume();
    writes.push(write);
    return write;
  }

  const admission = {
    anchor: (hex: string) => `anchor-${hex}-`,
    receipt: (hex: string) => `settlement-${hex}`,
  };
  const add = {
    anchor: (hex: string) => `"digest":"sha256:${hex}"`,
    receipt: (hex: string) => `"tx":"0x${hex}"`,
  };

  for (const kind of ["anchor", "receipt"] as const) {
    const store = { anchor: "anchor_store_unavailable", receipt: "settlement_store_unavailable" };

    test(`${kind}: Redis stops with the admission in its socket, before the enqueue: 503, never stored`, async () => {
      const write = await stalledAt(writer[kind], `${kind} before`, admission[kind]);
      assert.deepEqual([write.status, write.error], [503, store[kind]]);
      await recovered();
      assert.equal(await writer.isStored(write), false);
      // Nothing ever sent the add: the held admission ran when Redis resumed, alone.
      assert.equal(proxy.sentSinceMark(add[kind](write.hex)), false);
    });

    test(`${kind}: Redis stops with the add in its socket, after the enqueue: 202, then stored`, async () => {
      const write = await stalledAt(writer[kind], `${kind} after`, add[kind]);
      assert.equal(write.status, 202, JSON.stringify(write));
      await recovered();
      const deadline = Date.now() + DRAIN_MS;
      while (!(await writer.isStored(write))) {
        assert.ok(Date.now() < deadline, `${write.label} (202) was never stored`);
        await sleep(200);
      }
    });

    test(`${kind}: Redis stops right after the worker's store: 202, stored`, async () => {
      const label = `${kind} stored`;
      const stopped = new Promise<void>((resolve) => {
        stopAfterStore = { hex: sha256(label).toString("hex"), stopped: resolve };
      });
      const answer = writer[kind](label);
      await stopped;
      const write = await answer;
      redis.resume();
      writes.push(write);
      assert.equal(write.status, 202, JSON.stringify(write));
      await recovered();
      assert.equal(await writer.isStored(write), true);
    });
  }

  test("a slow Redis: under the command timeouts writes go through; past them, the same truth", async () => {
    // Each byte 200 ms late both ways: every command well under its timeout.
    proxy.delay(200);
    const slow = [await writer.anchor("slow 1"), await writer.receipt("slow 2")];
    writes.push(...slow);
    assert.deepEqual(
      slow.map((write) => write.status),
      [200, 200],
    );
    // 1.5 s late: past the stores' 1 s timeout, under the producer's 2 s. Whatever each write
    // is told, the final test checks it against what is stored once the worker has drained.
    proxy.delay(1_500);
    const slower = await Promise.all([writer.anchor("slower 1"), writer.receipt("slower 2")]);
    writes.push(...slower);
    proxy.delay(0);
    for (const write of slower) assert.ok([200, 202, 503].includes(write.status), write.label);
    await recovered();
    const deadline = Date.now() + DRAIN_MS;
    for (const write of slower.filter((each) => each.status !== 503)) {
      while (!(await writer.isStored(write))) {
        assert.ok(Date.now() < deadline, `${write.label} (${write.status}) was never stored`);
        await sleep(200);
      }
    }
  });

  test("every 503 is not stored, every 2xx or 202 is, and the quota charged is what is stored", async () => {
    // Checked again after every step's recovery and drain.
    await recovered();
    let stored = 0;
    for (const write of writes) {
      const expected = write.status !== 503;
      assert.equal(await writer.isStored(write), expected, JSON.stringify(write));
      if (expected && write.isAnchor) stored += await storedBytes(stack.base, stack.service, write);
    }
    assert.equal(await anchorUsage(stack.service), stored);
  });
});

/**
 * Redis at `maxmemory` under `noeviction` (issue 34, "not tried"): every write Redis refuses is
 * answered with a clear 503 and its store code (never a 500), nothing of it is stored once
 * Redis has room again, and reads and verification carry on.
 */
describe("Redis out of memory (noeviction) under the queued writes", () => {
  let redis: PrivateRedis;
  let stack: Stack;
  let admin: Redis;

  before(async () => {
    redis = await startPrivateRedis();
    stack = await startStack(redis.url, redis.url);
    admin = new Redis(redis.url);
  });
  after(async () => {
    admin.disconnect();
    await stack.close();
    await redis.stop();
  });

  test("a write refused for memory is a 503 with its store code, and is never stored", async () => {
    const { writer } = stack;
    const healthy = await writer.anchor("before memory ran out");
    assert.equal(healthy.status, 200, JSON.stringify(healthy));
    // Full: filler, then a limit below what Redis holds, so no eviction frees room for a write.
    const filler = Buffer.alloc(64 * 1024, 1);
    for (let n = 0; n < 64; n += 1) await admin.set(`filler:${n}`, filler);
    const used = Number(/used_memory:(\d+)/.exec(await admin.info("memory"))?.[1]);
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", String(used - 1024 * 1024));
    await assert.rejects(admin.set("filler:refused", filler), /OOM/);
    const refused = [
      await writer.anchor("while full 1"),
      await writer.receipt("while full 2"),
      await writer.anchor("while full 3"),
    ];
    const verify = await fetch(`${stack.base}/info`, { headers: stack.service.authHeaders });
    const read = await fetch(`${stack.base}${healthy.readUrl}`);
    // Room again, and the worker's queue drained: what was refused never lands.
    await admin.config("SET", "maxmemory", "0");
    const keys = await keysUnder(admin, "filler:");
    await admin.del(...keys);
    for (const write of refused) {
      assert.equal(write.status, 503, JSON.stringify(write));
      assert.equal(
        write.error,
        write.isAnchor ? "anchor_store_unavailable" : "settlement_store_unavailable",
      );
    }
    assert.equal(verify.status, 200);
    assert.equal(read.status, 200);
    const deadline = Date.now() + DRAIN_MS;
    const accepted = [healthy];
    for (const post of [writer.anchor, writer.receipt]) {
      let later = await post("after memory came back");
      while (later.status !== 200) {
        assert.ok(Date.now() < deadline, `no write went through again: ${JSON.stringify(later)}`);
        await sleep(200);
        later = await post("after memory came back");
      }
      accepted.push(later);
    }
    for (const write of refused) assert.equal(await writer.isStored(write), false, write.label);
    let stored = 0;
    // Each accepted submission is charged what it stores (a 503 gives its charge back).
    for (const write of accepted.filter((each) => each.isAnchor)) {
      stored += await storedBytes(stack.base, stack.service, write);
    }
    assert.equal(await anchorUsage(stack.service), stored);
  });
});
