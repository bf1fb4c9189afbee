/**
 * The settlements queue (queues/settlements.ts, service.md §4): signed, content-free settlement
 * receipts, stored once per transaction whatever the number of jobs, producers or queues.
 */
import assert from "node:assert/strict";
import { createHash, createPublicKey, verify } from "node:crypto";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { BullMqQueue } from "../../queues/bullmq-queue.js";
import { InProcessQueue } from "../../queues/in-process-queue.js";
import { JobFailedError, QueueUnavailableError } from "../../queues/job-queue.js";
import {
  SETTLEMENTS_QUEUE,
  SETTLEMENTS_QUEUE_OPTIONS,
  SettlementRecorder,
  type SettlementStored,
  type SettlementsQueue,
  settlementJobId,
  settlementsProcessor,
} from "../../queues/settlements.js";
import {
  type Settlement,
  type SettlementReceipt,
  userAgentFamily,
  userAgentHash,
} from "../../src/payments/settlement-receipt.js";
import { bullmqPrefix } from "../../src/redis/keys.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { JobJournal } from "../../src/storage/job-journal.js";
import { didKeyToPublicKey } from "../../src/verifier/crypto/did-key.js";
import { type Ed25519Signer, signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../support/bullmq-redis.js";

const ISSUED_AT = "2025-03-04T05:06:07Z";
const FIXED_CLOCK = () => Date.parse(ISSUED_AT) + 900;
const SIGNER = signerFromSeed(Buffer.alloc(32, 7));
const OTHER_SIGNER = signerFromSeed(Buffer.alloc(32, 9));

/** `0x` + 64 hex, different for every `n`. */
function txHash(n: number): string {
  return `0x${createHash("sha256").update(`settlement ${n}`).digest("hex")}`;
}

function settlement(n: number, extra: Partial<Settlement> = {}): Settlement {
  return {
    tx: txHash(n),
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/verify",
    ...extra,
  };
}

/**
 * An offline check that shares no code with the service: JCS of these receipts (ASCII strings
 * and one small integer) is JSON with sorted keys; the public key comes from the did:key.
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(",")}}`;
}

function verifiesOffline(receipt: SettlementReceipt, digest: string): boolean {
  const { sig, ...unsigned } = receipt;
  const signed = Buffer.from(canonicalJson(unsigned), "utf8");
  assert.equal(digest, `sha256:${createHash("sha256").update(signed).digest("hex")}`);
  assert.equal(sig.alg, "ed25519");
  assert.equal(sig.key, receipt.issuer);
  const raw = didKeyToPublicKey(receipt.issuer);
  const key = createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
    format: "jwk",
  });
  return verify(null, signed, key, Buffer.from(sig.value, "base64url"));
}

async function temporaryStore() {
  const dataDir = await mkdtemp(join(tmpdir(), "receiptd-settlements-"));
  const store = new FsDocumentStore(dataDir);
  return {
    store,
    async dispose() {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function settlementsQueue(
  store: FsDocumentStore,
  signer: () => Ed25519Signer = () => SIGNER,
): SettlementsQueue {
  return new InProcessQueue(
    SETTLEMENTS_QUEUE,
    settlementsProcessor(store, signer, FIXED_CLOCK),
    SETTLEMENTS_QUEUE_OPTIONS,
  );
}

async function submit(queue: SettlementsQueue, job: Settlement): Promise<SettlementStored> {
  const outcome = await queue.submit(settlementJobId(job.tx.toLowerCase()), job, {
    waitMs: 60_000,
  });
  assert.equal(outcome.state, "completed");
  return outcome.result;
}

describe("User-Agent families", () => {
  const table: [string, string][] = [
    ["", "none"],
    ["   ", "none"],
    ["curl/8.5.0", "curl"],
    ["curl", "curl"],
    ["Wget/1.21.4", "wget"],
    ["node", "node"],
    ["node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", "node"],
    ["undici", "node"],
    ["axios/1.7.2", "node"],
    ["got/14.0.0", "node"],
    ["python-requests/2.31.0", "python"],
    ["Python-urllib/3.11", "python"],
    ["python-httpx/0.27.0", "python"],
    ["Python/3.12 aiohttp/3.9.5", "python"],
    ["aiohttp/3.9.5", "python"],
    ["Go-http-client/1.1", "go"],
    [
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
      "browser",
    ],
    [
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:127.0) Gecko/20100101 Firefox/127.0",
      "browser",
    ],
    ["Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "other"],
    ["curly/1.0", "other"],
    ["nodejs-client/2", "other"],
    ["pythonista", "other"],
    ["Mozilla", "other"],
    ["PostmanRuntime/7.39.0", "other"],
    ["my-agent/0.1 curl/8.5.0", "other"],
  ];
  for (const [ua, family] of table) {
    test(`${JSON.stringify(ua)} → ${family}`, () => {
      assert.equal(userAgentFamily(ua), family);
    });
  }

  test("the hash is the first 12 hex digits of SHA-256 of the raw string", () => {
    assert.equal(
      userAgentHash("curl/8.5.0"),
      createHash("sha256").update("curl/8.5.0").digest("hex").slice(0, 12),
    );
    assert.equal(userAgentHash("abc"), "ba7816bf8f01");
    assert.notEqual(userAgentHash("curl/8.5.0"), userAgentHash("curl/8.5.0 "));
  });
});

describe("settlements processor", () => {
  let fixture: Awaited<ReturnType<typeof temporaryStore>>;
  let queue: SettlementsQueue;
  before(async () => {
    fixture = await temporaryStore();
    queue = settlementsQueue(fixture.store);
  });
  after(async () => {
    await queue.close();
    await fixture.dispose();
  });

  test("signs a content-free receipt and stores {receipt, receipt_digest, stored_at}", async () => {
    const job = settlement(1, { ua: "curl/8.5.0", rpc: "tools/call", tool: "verify_bundle" });
    const stored = await submit(queue, job);
    const receipt: SettlementReceipt = {
      kind: "svc.payment-receipt",
      version: 1,
      issued_at: ISSUED_AT,
      network: "eip155:8453",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      amount: "10000",
      pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      tx: job.tx,
      path: "/verify",
      rpc: "tools/call",
      tool: "verify_bundle",
      ua_family: "curl",
      uah: userAgentHash("curl/8.5.0"),
      issuer: SIGNER.did,
      sig: { alg: "ed25519", key: SIGNER.did, value: stored.receipt.sig.value },
    };
    assert.deepEqual(stored, { tx: job.tx, digest: stored.digest, idempotent: false, receipt });
    assert.ok(verifiesOffline(stored.receipt, stored.digest));
    const bytes = await fixture.store.get("settlements", job.tx);
    assert.equal(
      Buffer.from(bytes ?? []).toString("utf8"),
      JSON.stringify({ receipt, receipt_digest: stored.digest, stored_at: ISSUED_AT }),
    );
  });

  test("the User-Agent: unknown → no members; sent none → `none` and no hash", async () => {
    const unknown = await submit(queue, settlement(2));
    assert.equal(unknown.receipt.ua_family, undefined);
    assert.equal(unknown.receipt.uah, undefined);
    assert.ok(!("rpc" in unknown.receipt) && !("tool" in unknown.receipt));
    const none = await submit(queue, settlement(3, { ua: "" }));
    assert.equal(none.receipt.ua_family, "none");
    assert.equal(none.receipt.uah, undefined);
    const nulls = await submit(queue, settlement(4, { ua: null, rpc: null, tool: null }));
    assert.deepEqual(Object.keys(nulls.receipt), Object.keys(unknown.receipt));
    for (const stored of [unknown, none, nulls]) {
      assert.ok(verifiesOffline(stored.receipt, stored.digest));
    }
  });

  test("a second job for the same tx answers the first receipt, idempotent, signing nothing", async () => {
    const first = await submit(queue, settlement(5, { ua: "node" }));
    const before = await fixture.store.get("settlements", first.tx);
    // Different details, even: the first receipt stands.
    const second = await submit(
      queue,
      settlement(5, { tx: txHash(5).toUpperCase().replace("0X", "0x"), ua: "curl/8", amount: "1" }),
    );
    assert.deepEqual(second, { ...first, idempotent: true });
    assert.deepEqual(await fixture.store.get("settlements", first.tx), before);
    assert.deepEqual(await fixture.store.list("settlements", first.tx), [first.tx]);
  });

  test("the signer is asked per job, so a rotated key signs the next receipts", async () => {
    let current = SIGNER;
    const rotating = settlementsQueue(fixture.store, () => current);
    try {
      const before = await submit(rotating, settlement(6));
      current = OTHER_SIGNER;
      const afterRotation = await submit(rotating, settlement(7));
      assert.equal(before.receipt.issuer, SIGNER.did);
      assert.equal(afterRotation.receipt.issuer, OTHER_SIGNER.did);
      assert.equal(afterRotation.receipt.sig.key, OTHER_SIGNER.did);
      assert.ok(verifiesOffline(afterRotation.receipt, afterRotation.digest));
      // A receipt signed before the rotation is kept as it was.
      assert.equal((await submit(rotating, settlement(6))).receipt.issuer, SIGNER.did);
    } finally {
      await rotating.close();
    }
  });

  test("a payload that is not a settlement fails the job and stores nothing", async () => {
    const withoutPayTo = ({ payTo: _, ...rest }: Settlement) => rest;
    const bad: [string, unknown, RegExp][] = [
      ["short tx", { ...settlement(8), tx: "0x1234" }, /body\/tx must match pattern/],
      ["zero amount", { ...settlement(8), amount: "0" }, /body\/amount must match pattern/],
      ["numeric amount", { ...settlement(8), amount: 10000 }, /body\/amount must be string/],
      ["query in path", { ...settlement(8), path: "/verify?x=1" }, /body\/path must match/],
      ["long network", { ...settlement(8), network: "n".repeat(65) }, /body\/network must match/],
      ["unknown member", { ...settlement(8), received_at: "now" }, /unexpected member/],
      ["missing payTo", withoutPayTo(settlement(8)), /must have required property 'payTo'/],
      ["huge ua", { ...settlement(8), ua: "a".repeat(16_385) }, /body\/ua must NOT have more/],
    ];
    for (const [name, payload, message] of bad) {
      await assert.rejects(
        queue.submit(settlementJobId(txHash(8)), payload as Settlement, { waitMs: 60_000 }),
        (error: unknown) =>
          error instanceof JobFailedError &&
          error.cause instanceof Error &&
          error.cause.name === "InvalidSettlementError" &&
          message.test(error.message),
        name,
      );
    }
    assert.equal(await fixture.store.get("settlements", txHash(8)), null);
  });

  test("1,000 jobs for 500 transactions, each twice at once on two queues, store 500 receipts", async () => {
    const second = settlementsQueue(fixture.store);
    const count = 500;
    const first = 1000;
    try {
      const submissions = Array.from({ length: count }, (_, i) => {
        const n = first + i;
        // Two producers, two queues (two workers): only the store can keep it to one receipt.
        return Promise.all([
          submit(queue, settlement(n, { ua: "curl/8.5.0" })),
          submit(second, settlement(n, { ua: "python-requests/2.31" })),
        ]);
      });
      const answers = await Promise.all(submissions);
      const ids = new Set<string>();
      for (const [a, b] of answers) {
        assert.equal(a.tx, b.tx);
        assert.equal(a.digest, b.digest);
        assert.deepEqual(a.receipt, b.receipt);
        assert.equal(Number(a.idempotent) + Number(b.idempotent), 1, a.tx);
        ids.add(a.tx);
      }
      assert.equal(ids.size, count);
      const stored = (await fixture.store.list("settlements")).filter((id) => ids.has(id));
      assert.equal(stored.length, count);
      for (const [a] of answers) {
        const document = JSON.parse(
          Buffer.from((await fixture.store.get("settlements", a.tx)) ?? []).toString("utf8"),
        ) as { receipt_digest: string };
        assert.equal(document.receipt_digest, a.digest);
      }
    } finally {
      await second.close();
    }
  });
});

describe("SettlementRecorder (the x402 path)", () => {
  let fixture: Awaited<ReturnType<typeof temporaryStore>>;
  let journalDir: string;
  const logged: { details: object; message: string }[] = [];
  const log = { error: (details: object, message: string) => logged.push({ details, message }) };
  const paid = (n: number, ua: string | null) => ({
    tx: txHash(n),
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "10000",
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/anchors/:digest",
    ua,
  });
  /** An in-process settlements queue whose jobs wait for `release` before they run. */
  const gatedQueue = () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const processor = settlementsProcessor(fixture.store, () => SIGNER, FIXED_CLOCK);
    const queue: SettlementsQueue = new InProcessQueue(
      SETTLEMENTS_QUEUE,
      async (payload, jobId) => {
        await released;
        return processor(payload, jobId);
      },
      SETTLEMENTS_QUEUE_OPTIONS,
    );
    return { queue, release };
  };
  const journal = () => new JobJournal<Settlement>(journalDir);
  const stored = async (n: number) => {
    const bytes = await fixture.store.get("settlements", txHash(n));
    return bytes === null ? null : (JSON.parse(Buffer.from(bytes).toString("utf8")) as object);
  };
  /** Bounded wait for the recorder to hand every journaled job over. */
  const drained = async (recorder: SettlementRecorder) => {
    for (let attempt = 0; attempt < 1000 && recorder.waiting > 0; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(recorder.waiting, 0);
  };

  before(async () => {
    fixture = await temporaryStore();
    journalDir = await mkdtemp(join(tmpdir(), "receiptd-journal-"));
  });
  after(async () => {
    await fixture.dispose();
    await rm(journalDir, { recursive: true, force: true });
  });

  test("record resolves once the job is journaled; the entry goes once the receipt is stored", async () => {
    const { queue, release } = gatedQueue();
    const recorder = new SettlementRecorder({ queue, journal: journal(), log });
    await recorder.start();
    await recorder.record(paid(20, "node"));
    // Answered while the job cannot have run: only the journal holds it, whole.
    assert.equal(await stored(20), null);
    const { entries } = await journal().read();
    assert.deepEqual(entries, [{ jobId: settlementJobId(txHash(20)), payload: paid(20, "node") }]);
    release();
    await drained(recorder);
    assert.deepEqual((await journal().read()).entries, []);
    const document = (await stored(20)) as { receipt: SettlementReceipt; receipt_digest: string };
    assert.equal(document.receipt.ua_family, "node");
    assert.equal(document.receipt.path, "/anchors/:digest");
    assert.ok(verifiesOffline(document.receipt, document.receipt_digest));
    await recorder.close();
    await queue.close();
    assert.deepEqual(logged, []);
  });

  test('a request without a User-Agent (`ua: ""`) is family `none`, without a hash', async () => {
    const { queue, release } = gatedQueue();
    release();
    const recorder = new SettlementRecorder({ queue, journal: journal(), log });
    await recorder.start();
    await recorder.record(paid(21, ""));
    await drained(recorder);
    const document = (await stored(21)) as { receipt: SettlementReceipt };
    assert.equal(document.receipt.ua_family, "none");
    assert.equal(document.receipt.uah, undefined);
    await recorder.close();
    await queue.close();
  });

  test("start replays what a crash left, and never signs a stored receipt again", async () => {
    // A job journaled by a process that died before running it, and one that died after
    // storing the receipt but before forgetting the entry.
    const first = settlementsQueue(fixture.store, () => OTHER_SIGNER);
    const already = await submit(first, settlement(24));
    await first.close();
    await journal().write(settlementJobId(txHash(24)), settlement(24));
    await journal().write(settlementJobId(txHash(25)), settlement(25, { ua: "curl/8.5.0" }));

    const queue = settlementsQueue(fixture.store);
    const recorder = new SettlementRecorder({ queue, journal: journal(), log });
    await recorder.start();
    await drained(recorder);
    assert.deepEqual((await journal().read()).entries, []);
    const kept = (await stored(24)) as { receipt_digest: string; receipt: SettlementReceipt };
    assert.equal(kept.receipt_digest, already.digest);
    assert.equal(kept.receipt.issuer, OTHER_SIGNER.did);
    const replayed = (await stored(25)) as { receipt: SettlementReceipt };
    assert.equal(replayed.receipt.issuer, SIGNER.did);
    assert.equal(replayed.receipt.ua_family, "curl");
    await recorder.close();
    await queue.close();
  });

  test("a persistent queue is used alone; when it fails, the job is journaled and retried", async () => {
    const received: string[] = [];
    let failures = 2;
    const queue: SettlementsQueue = {
      name: SETTLEMENTS_QUEUE,
      persistent: true,
      async submit(jobId) {
        if (failures > 0) {
          failures -= 1;
          throw new QueueUnavailableError("queue settlements: Redis is not reachable");
        }
        received.push(jobId);
        return { state: "pending", jobId };
      },
      async close() {},
    };
    const recorder = new SettlementRecorder({ queue, journal: journal(), log, retryMs: 10 });
    await recorder.start();
    await recorder.record(paid(26, "node"));
    await recorder.record(paid(27, "node"));
    // The first add failed, and so did the first hand-over from the journal; the second add
    // went straight to the queue.
    assert.deepEqual(received, [settlementJobId(txHash(27))]);
    await drained(recorder);
    assert.deepEqual(
      received.sort(),
      [settlementJobId(txHash(26)), settlementJobId(txHash(27))].sort(),
    );
    assert.deepEqual((await journal().read()).entries, []);
    // Logged once each: the fall-back to the journal, and the first failed hand-over.
    assert.deepEqual(
      logged.map((entry) => entry.message),
      [
        "settlements queue unavailable; the receipt job is journaled",
        "settlement receipt job not stored yet; it stays journaled and is retried",
      ],
    );
    await recorder.close();
    logged.length = 0;
  });

  test("a malformed settlement or an unwritable journal is logged, never thrown", async () => {
    const queue = settlementsQueue(fixture.store);
    // A journal whose directory is a file: nothing can be written under it.
    const blocked = join(journalDir, "blocked");
    await writeFile(blocked, "not a directory");
    const recorder = new SettlementRecorder({
      queue,
      journal: new JobJournal(join(blocked, "settlements")),
      log,
    });
    await recorder.record({ ...paid(22, null), amount: "-1" });
    assert.equal(logged.length, 1);
    assert.equal(logged[0]?.message, "settlement receipt not recorded");
    await recorder.record(paid(23, "curl/8.5.0 private"));
    assert.equal(logged.length, 2);
    const [, second] = logged;
    assert.equal(second?.message, "settlement receipt job could not be made durable");
    // What is logged lets an operator submit it again, and carries nothing the client sent.
    const details = second?.details as { settlement: Record<string, unknown> };
    assert.equal(details.settlement.tx, txHash(23));
    assert.ok(!JSON.stringify(details).includes("private"));
    assert.equal(await stored(22), null);
    assert.equal(await stored(23), null);
    await assert.rejects(recorder.start());
    await queue.close();
    logged.length = 0;
  });
});

describe("SettlementRecorder over BullMQ", () => {
  test("record resolves once Redis holds the job; the journal is not written", async () => {
    const prefix = testPrefix();
    const journalDir = await mkdtemp(join(tmpdir(), "receiptd-journal-"));
    // No worker consumes the queue: whatever Redis holds when `record` resolves was added
    // before it did.
    const queue = new BullMqQueue<Settlement, SettlementStored>(SETTLEMENTS_QUEUE, {
      redis: TEST_REDIS_URL,
      prefix,
      ...SETTLEMENTS_QUEUE_OPTIONS,
    });
    const connection = new Redis(TEST_REDIS_URL);
    const inspector = new Queue(SETTLEMENTS_QUEUE, {
      connection,
      prefix: bullmqPrefix(prefix, SETTLEMENTS_QUEUE),
    });
    const logged: string[] = [];
    const recorder = new SettlementRecorder({
      queue,
      journal: new JobJournal(journalDir),
      log: { error: (_details, message) => logged.push(message) },
    });
    try {
      await recorder.start();
      const { rpc: _rpc, tool: _tool, ...paid } = { ...settlement(30), ua: "node" };
      await recorder.record(paid);
      const job = await inspector.getJob(settlementJobId(txHash(30)));
      assert.deepEqual(job?.data, paid);
      assert.equal(recorder.waiting, 0);
      assert.deepEqual(await readdir(journalDir), []);
      assert.deepEqual(logged, []);
    } finally {
      await recorder.close();
      await queue.close();
      await inspector.close();
      connection.disconnect();
      await removePrefix(prefix);
      await rm(journalDir, { recursive: true, force: true });
    }
  });
});
