/**
 * A paid answer never outlives its settlement receipt (issue 16, item 6). The real server (a
 * child process) takes x402 payments at concurrency through the local facilitator peer and is
 * killed with SIGKILL just after a paid answer; that is done several times on one DATA_DIR.
 * Every call answered with a `PAYMENT-RESPONSE` before a kill must have its receipt at
 * `GET /receipts/{tx}` once the server is back, and each receipt is written once: what is
 * served never changes across later crashes and restarts. Embedded mode (the file journal)
 * and distributed mode (BullMQ, with a `receiptd worker` child) are both run.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { startFacilitatorPeer } from "../../../src/payments/facilitator-peer.js";
import { requirementFromWire } from "../../../src/payments/requirements.js";
import { FsDocumentStore } from "../../../src/storage/fs-document-store.js";
import { verifyEd25519 } from "../../../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../../../src/verifier/json/canonical.js";
import { parseJson } from "../../../src/verifier/json/parse.js";
import { fromPlain, isObject, type JsonObject } from "../../../src/verifier/json/value.js";
import {
  fromHeader,
  PAY_TO,
  signAuthorization,
  toHeader,
  v2Payment,
  wallet,
} from "../../payments/support.js";
import { removePrefix, TEST_REDIS_URL, testPrefix } from "../../support/bullmq-redis.js";
import { corpusBytes } from "../../support/corpus.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.js";
import { temporaryDataDir } from "../support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const RECEIPTD = fileURLToPath(new URL("../../../src/cli/receiptd.ts", import.meta.url));
/** Paying clients at once (the runs used 48). */
const CONCURRENCY = 32;
/** Paid answers to wait for in a round before the kill; other calls are still in flight. */
const ANSWERS_BEFORE_KILL = 40;
const ROUNDS = 3;
const DEADLINE_MS = 60_000;

interface Mode {
  name: string;
  /** Environment of the web processes (and of the worker, when there is one). */
  env: Record<string, string>;
  /** Whether a `receiptd worker` child runs the queue (distributed mode). */
  worker: boolean;
  cleanup: () => Promise<void>;
}

interface Round {
  /** Transactions named by a `PAYMENT-RESPONSE` before the kill. */
  answered: string[];
  /** Calls cut off by the kill (no answer at all). */
  cutOff: number;
}

/** Polls until `done` holds; only a run past the generous deadline fails. */
async function until(what: () => string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`timed out: ${what()}`);
    await sleep(50);
  }
}

/** The first offer of the v2 challenge, as a client reads it. */
async function offer(base: string): Promise<JsonObject> {
  const challenge = await fetch(`${base}/verify`, { method: "POST", body: GOOD });
  await challenge.body?.cancel();
  assert.equal(challenge.status, 402);
  const required = fromHeader(String(challenge.headers.get("payment-required")));
  const wire = fromPlain((required as { accepts: unknown[] }).accepts[0]);
  assert.ok(isObject(wire));
  return wire;
}

/**
 * Pays for `/verify` from `CONCURRENCY` clients until `ANSWERS_BEFORE_KILL` paid answers are
 * in, then kills the server at once, in the callback of the answer that reached the count.
 */
async function payUntilKilled(server: ServerProcess): Promise<Round> {
  const accepted = await offer(server.base);
  const requirement = requirementFromWire(accepted, 2);
  const payer = wallet();
  const exited = once(server.child, "exit");
  const answered: string[] = [];
  let cutOff = 0;
  let killed = false;
  const kill = () => {
    if (killed) return;
    killed = true;
    server.child.kill("SIGKILL");
  };
  const client = async () => {
    while (!killed) {
      const nowS = BigInt(Math.floor(Date.now() / 1000));
      const signed = await signAuthorization(payer, requirement, {
        validAfter: nowS - 600n,
        validBefore: nowS + BigInt(requirement.maxTimeoutSeconds),
      });
      let response: Response;
      try {
        response = await fetch(`${server.base}/verify`, {
          method: "POST",
          headers: { "payment-signature": toHeader(v2Payment(accepted, signed)) },
          body: GOOD,
        });
      } catch {
        cutOff += 1;
        return;
      }
      const header = response.headers.get("payment-response");
      if (response.status !== 200 || header === null) {
        kill();
        assert.fail(`a paid call was answered ${response.status}: ${await response.text()}`);
      }
      answered.push((fromHeader(header) as { transaction: string }).transaction);
      if (answered.length >= ANSWERS_BEFORE_KILL) kill();
      await response.body?.cancel().catch(() => {});
    }
  };
  const clients = await Promise.allSettled(Array.from({ length: CONCURRENCY }, client));
  const failed = clients.find((outcome) => outcome.status === "rejected");
  if (failed !== undefined) throw failed.reason;
  const [, signal] = await exited;
  assert.equal(signal, "SIGKILL");
  return { answered, cutOff };
}

/** The served receipt of `tx` (its `receipt_digest`), or null while there is none. */
async function servedDigest(base: string, tx: string): Promise<string | null> {
  const response = await fetch(`${base}/receipts/${tx}`);
  const text = await response.text();
  if (response.status === 404) return null;
  assert.equal(response.status, 200, text);
  const document = parseJson(text);
  assert.ok(isObject(document));
  const receipt = document.get("receipt");
  assert.ok(isObject(receipt));
  assert.equal(receipt.get("tx"), tx);
  const sig = receipt.get("sig");
  assert.ok(isObject(sig));
  const issuer = String(receipt.get("issuer"));
  assert.ok(verifyEd25519(issuer, canonicalBytes(receipt, "sig"), String(sig.get("value"))));
  return String(document.get("receipt_digest"));
}

function crashSuite(mode: Mode): void {
  describe(`kill -9 just after paid answers (${mode.name})`, () => {
    test(`${ROUNDS} crashes: every answered transaction has its receipt, written once`, {
      timeout: 600_000,
    }, async (t) => {
      const dataDir = await temporaryDataDir();
      const peer = await startFacilitatorPeer();
      const worker = mode.worker ? startWorker({ ...mode.env, DATA_DIR: dataDir }) : undefined;
      const env = {
        ...mode.env,
        DATA_DIR: dataDir,
        X402_PAY_TO: PAY_TO,
        FACILITATOR_URL: peer.url,
        PUBLIC_BASE_URL: "https://receiptd.example",
        X402_DAILY_CAP: "1000000",
        // The test polls `GET /receipts` keylessly, counted against the anonymous bucket, and
        // pays from one address as fast as it can: no per-address share may shape it.
        ANON_DAILY_CAP: "1000000",
        ANON_ADDRESS_DAILY_CAP: "1000000",
        X402_SIGNATURE_CHECKS_PER_ADDRESS: "1000000",
        X402_SIGNATURE_CHECKS_PER_SECOND: "1000000",
        CPU_THREADS: "1",
        CPU_MAX_QUEUE: String(4 * CONCURRENCY),
      };
      let server: ServerProcess | undefined;
      try {
        /** Transaction → the receipt digest first served for it. */
        const seen = new Map<string, string>();
        /** Transactions whose served receipt changed: written more than once. */
        const rewritten = new Set<string>();
        const answered: string[] = [];
        const figures: string[] = [];
        for (let round = 1; round <= ROUNDS + 1; round += 1) {
          server = await startServerProcess(env);
          const base = server.base;
          // Everything answered before any earlier kill is (or becomes) served, unchanged.
          let missing = answered.length;
          await until(
            () => `${missing} of ${answered.length} answered calls still have no receipt`,
            async () => {
              missing = 0;
              for (const tx of answered) {
                const digest = await servedDigest(base, tx);
                if (digest === null) {
                  missing += 1;
                  continue;
                }
                const first = seen.get(tx);
                if (first === undefined) seen.set(tx, digest);
                else if (digest !== first) rewritten.add(tx);
              }
              return missing === 0;
            },
          );
          if (round > ROUNDS) break;
          const { answered: paid, cutOff } = await payUntilKilled(server);
          server = undefined;
          assert.ok(paid.length >= ANSWERS_BEFORE_KILL);
          assert.equal(new Set(paid).size, paid.length, "a transaction was named twice");
          answered.push(...paid);
          figures.push(`round ${round}: ${paid.length} answered, ${cutOff} cut off`);
        }
        // One document per transaction, each one a receipt served above or of a call cut off.
        const store = new FsDocumentStore(dataDir);
        const stored = await store.list("settlements");
        await store.close();
        assert.equal(new Set(stored).size, stored.length);
        for (const tx of answered) assert.ok(stored.includes(tx));
        t.diagnostic(
          `${figures.join("; ")}; ${answered.length} answered with PAYMENT-RESPONSE, ` +
            `${seen.size} receipts present after restart, ${rewritten.size} rewritten, ` +
            `${stored.length} stored in all`,
        );
        assert.deepEqual([...rewritten], [], "a receipt was written more than once");
        await journalDrained(dataDir);
      } finally {
        if (server !== undefined) await stopServerProcess(server);
        if (worker !== undefined) {
          const stopped = once(worker, "exit");
          worker.kill("SIGTERM");
          await stopped;
        }
        await peer.close();
        await mode.cleanup();
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });
}

/** No settlement job is left waiting in the embedded journal once the receipts are stored. */
async function journalDrained(dataDir: string): Promise<void> {
  const entries = await readdir(join(dataDir, "journal", "settlements")).catch(() => []);
  assert.deepEqual(
    entries.filter((name) => name.endsWith(".json")),
    [],
  );
}

/** A `receiptd worker` child on the web processes' DATA_DIR and Redis prefix. */
function startWorker(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", RECEIPTD, "worker"], {
    env: { ...process.env, LOG_LEVEL: "error", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

crashSuite({ name: "embedded", env: {}, worker: false, cleanup: async () => {} });

const prefix = testPrefix();
crashSuite({
  name: "distributed",
  env: { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix },
  worker: true,
  cleanup: () => removePrefix(prefix),
});
