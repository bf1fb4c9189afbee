/**
 * Distributed mode on a Redis Cluster (issue 36), served by real processes: two `receiptd serve`
 * and one `receiptd worker`, configured by `REDIS_CLUSTER_NODES` alone (no `REDIS_URL`), on a
 * local cluster of 3 masters and 3 replicas started here, and a PostgreSQL schema of their own.
 * - a key's daily cap is exact under a 50-way race split across both web processes;
 * - an anchor and a settlement receipt are written through the queue (the worker stores them)
 *   and read back from the other web process;
 * - `receiptd admin purge --prefix` finds the deployment's keys on every master;
 * - failover: a master is killed with SIGKILL during a stream of settlement receipts; while its
 *   replica is promoted, every answer comes within the bound (a fast 503 or an accepted write,
 *   never a hang), and afterwards every accepted settlement is stored; paid calls (x402, a
 *   facilitator stand-in) run in the same stream, and once the web processes have restarted
 *   (the settlement-intent journal is reconciled at start), every payment the facilitator
 *   settled has its receipt.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { PrivateKeyAccount } from "viem/accounts";
import { pendingProof, sha256 } from "../../bench/support/ots.js";
import { PRODUCER_COMMAND_TIMEOUT_MS } from "../../queues/bullmq-queue.js";
import { SETTLEMENTS_QUEUE } from "../../queues/settlements.js";
import { type FacilitatorPeer, startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { bullmqPrefix } from "../../src/redis/keys.js";
import {
  authorizationState,
  PAY_TO,
  paymentFor,
  settlementFields,
  wallet,
} from "../payments/support.js";
import { startTestCluster, type TestCluster } from "../redis/cluster-support.js";
import { randomPrefix } from "../redis/support.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../service/support/server-process.js";
import { corpusBytes } from "../support/corpus.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const run = promisify(execFile);
const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const CAP = 20;
const RACE = 50;
/** Generous for a loaded 2-core machine; what matters is that nothing waits for the failover. */
const ANSWER_BOUND_MS = PRODUCER_COMMAND_TIMEOUT_MS + 4_000;
const DRAIN_MS = 60_000;
/** `POST /payment-receipts` waits this long for the worker before answering 202 (route.ts). */
const STORE_WAIT_MS = 10_000;
const _NETWORK = "eip155:8453";

function receiptd(args: string[], env: Record<string, string>) {
  return run(process.execPath, ["--import", "tsx", "src/cli/receiptd.ts", ...args], {
    env: { ...process.env, LOG_LEVEL: "error", ...env },
    timeout: 60_000,
  });
}

/** Registers the suite; `served` and `failover` run in files of their own (each under the runner's limit). */
export function clusterDeploymentSuite(part: "served" | "failover"): void {
  describe(`distributed mode on a Redis Cluster: two web processes and a worker (${part})`, () => {
    let cluster: TestCluster;
    let webs: ServerProcess[] = [];
    let worker: ChildProcess;
    let env: Record<string, string>;
    const schema = privateSchema();
    const prefix = randomPrefix();
    const dirs: string[] = [];
    let token: string;
    let peer: FacilitatorPeer;
    const payer: PrivateKeyAccount = wallet();

    before(async () => {
      cluster = await startTestCluster({ own: true });
      peer = await startFacilitatorPeer();
      const dataDir = await mkdtemp(join(tmpdir(), "receiptd-cluster-web-"));
      dirs.push(dataDir);
      env = {
        REDIS_CLUSTER_NODES: cluster.nodesEnv,
        REDIS_URL: "",
        REDIS_PREFIX: prefix,
        DATABASE_URL,
        DATABASE_SCHEMA: schema,
        DATA_DIR: dataDir,
        X402_PAY_TO: PAY_TO,
        FACILITATOR_URL: peer.url,
        // The paying stream comes from one address, faster than a client's signature budget,
        // which is shared by both webs (test/distributed/shared-limits.test.ts tests it).
        X402_SIGNATURE_CHECKS_PER_ADDRESS: "1000",
      };
      // Both web processes and the worker share the deployment's key (one DATA_DIR).
      webs = [await startServerProcess(env), await startServerProcess(env)];
      token = (await readFile(join(dataDir, "internal.token"), "utf8")).trim();
      worker = spawn(process.execPath, ["--import", "tsx", "src/cli/receiptd.ts", "worker"], {
        env: { ...process.env, ...env, LOG_LEVEL: "error" },
        stdio: ["ignore", "ignore", "inherit"],
      });
    });

    after(async () => {
      for (const web of webs) await stopServerProcess(web);
      if (worker.exitCode === null && worker.signalCode === null) {
        const exited = once(worker, "exit");
        worker.kill("SIGTERM");
        // Bounded: once, under load, a worker still waiting on the killed master did not exit
        // on SIGTERM and held the file to its 300 s limit (noted for a look, issue 36).
        const stopped = await Promise.race([
          exited.then(() => true),
          sleep(15_000).then(() => false),
        ]);
        if (!stopped) {
          worker.kill("SIGKILL");
          await exited;
        }
      }
      await cluster?.stop();
      await peer?.close();
      await dropSchema(schema);
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    });

    const web = (index: number) => webs[index % webs.length]?.base ?? "";

    if (part === "served") {
      test("/health reports the cluster and the database up, from both web processes", async () => {
        for (const index of [0, 1]) {
          const answer = await fetch(`${web(index)}/health`);
          assert.equal(answer.status, 200);
          assert.deepEqual(await answer.json(), { ok: true, redis: "up", db: "up" });
        }
      });

      test(`a key's cap of ${CAP} is exact under a ${RACE}-way race across both web processes`, async () => {
        const { stdout } = await receiptd(
          ["keys", "create", "--name", "cluster-race", "--cap", String(CAP), "--key-only"],
          env,
        );
        const key = stdout.trim();
        const statuses = await Promise.all(
          Array.from({ length: RACE }, async (_, call) => {
            const answer = await fetch(`${web(call)}/verify`, {
              method: "POST",
              headers: { "x-svc-key": key, "content-type": "application/json" },
              body: GOOD,
            });
            await answer.arrayBuffer();
            return answer.status;
          }),
        );
        assert.equal(statuses.filter((status) => status === 200).length, CAP);
        assert.equal(statuses.filter((status) => status === 429).length, RACE - CAP);
        // Both processes served some of the race, and agree on what is left: nothing.
        for (const index of [0, 1]) {
          const answer = await fetch(`${web(index)}/verify`, {
            method: "POST",
            headers: { "x-svc-key": key, "content-type": "application/json" },
            body: GOOD,
          });
          await answer.arrayBuffer();
          assert.equal(answer.status, 429);
          assert.equal(answer.headers.get("x-ratelimit-remaining"), "0");
        }
      });

      test("an anchor and a settlement receipt go through the queue to the worker", async () => {
        const { stdout } = await receiptd(
          ["keys", "create", "--name", "cluster-writer", "--key-only"],
          env,
        );
        const key = stdout.trim();
        const digest = sha256("anchored on a cluster");
        const anchored = await fetch(`${web(0)}/anchors`, {
          method: "POST",
          headers: { "x-svc-key": key, "content-type": "application/json" },
          body: JSON.stringify({
            digest: `sha256:${digest.toString("hex")}`,
            proof: pendingProof(digest).toString("base64"),
          }),
        });
        await anchored.arrayBuffer();
        assert.ok([200, 201, 202].includes(anchored.status), String(anchored.status));
        const tx = `0x${sha256("settled on a cluster").toString("hex")}`;
        const settled = await settle(web(1), tx);
        assert.ok([200, 201, 202].includes(settled.status), JSON.stringify(settled));
        await until("both are stored", async () => {
          const anchor = await fetch(`${web(1)}/anchors/sha256:${digest.toString("hex")}`, {
            headers: { "x-svc-key": key },
          });
          const receipt = await fetch(`${web(0)}/receipts/${tx}`);
          await Promise.all([anchor.arrayBuffer(), receipt.arrayBuffer()]);
          return anchor.status === 200 && receipt.status === 200;
        });
      });

      test("admin purge --prefix counts the deployment's keys on every master", async () => {
        const { stdout } = await receiptd(["admin", "purge", "--prefix", prefix], env);
        const count = Number(/would remove (\d+) key/.exec(stdout)?.[1]);
        assert.ok(count > 0, stdout);
        // The keys are spread over the masters: the caps and the queues hash to different slots.
        const holding = await Promise.all(
          (await cluster.masters()).map(async (node) => {
            const { stdout: keys } = await run("redis-cli", [
              "-p",
              String(node.port),
              "--scan",
              "--pattern",
              `${prefix}*`,
            ]);
            return keys.trim() === "" ? 0 : keys.trim().split("\n").length;
          }),
        );
        assert.equal(
          holding.reduce((sum, keys) => sum + keys, 0),
          count,
        );
        assert.ok(holding.filter((keys) => keys > 0).length >= 2, String(holding));
      });
    }
    async function settle(base: string, tx: string) {
      const started = performance.now();
      try {
        const answer = await fetch(`${base}/payment-receipts`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-internal-token": token },
          body: JSON.stringify(settlementFields(tx)),
        });
        const body = (await answer.json()) as { error?: string };
        return { tx, status: answer.status, error: body.error, ms: performance.now() - started };
      } catch (error) {
        return { tx, status: 0, error: String(error), ms: performance.now() - started };
      }
    }

    /** One paid `POST /verify`: the challenge, a signed authorization, the paid call. */
    async function pay(base: string) {
      const paid = await paymentFor(base, payer, GOOD);
      if (paid === null) return null;
      const { header, tx } = paid;
      const started = performance.now();
      try {
        const answer = await fetch(`${base}/verify`, {
          method: "POST",
          headers: { "payment-signature": header },
          body: GOOD,
        });
        const text = await answer.text();
        // The error code of a refusal, for the figures (never the body of a paid answer).
        const error = answer.status === 200 ? undefined : /"error":"([a-z_]+)"/.exec(text)?.[1];
        return { tx, header, status: answer.status, error, ms: performance.now() - started };
      } catch (error) {
        return { tx, header, status: 0, error: String(error), ms: performance.now() - started };
      }
    }

    /** Whether the stand-in settled the payment of `header` (its own `/authorization-state`). */
    async function settledAtPeer(header: string): Promise<boolean> {
      return (await authorizationState(peer.url, header)).settled;
    }

    if (part === "failover") {
      test("failover: a master killed mid-stream answers fast, and every accepted receipt is stored", {
        timeout: 270_000,
      }, async (t) => {
        // The master that holds the settlements queue: the writes of the stream go through it.
        const victim = await cluster.masterOf(`${bullmqPrefix(prefix, SETTLEMENTS_QUEUE)}:x`);
        const answers: Awaited<ReturnType<typeof settle>>[] = [];
        let stop = false;
        let sent = 0;
        const stream = async (lane: number) => {
          while (!stop) {
            sent += 1;
            const tx = `0x${sha256(`failover ${lane} ${sent}`).toString("hex")}`;
            answers.push(await settle(web(lane), tx));
          }
        };
        const paid: NonNullable<Awaited<ReturnType<typeof pay>>>[] = [];
        const payStream = async (lane: number) => {
          while (!stop) {
            const outcome = await pay(web(lane));
            if (outcome !== null) paid.push(outcome);
            else await sleep(50);
          }
        };
        const streams = [stream(0), stream(1), payStream(0), payStream(1)];
        await until("the stream runs", async () => answers.length >= 20);
        const killedAt = answers.length;
        const paidAtKill = paid.length;
        const killedAtMs = performance.now();
        await cluster.kill(victim.port);
        await cluster.waitHealthy(60_000);
        const healthyAfterMs = performance.now() - killedAtMs;
        // Keep streaming until the service accepts writes again on the promoted replica.
        await until("writes are accepted again", async () => {
          const last = answers.slice(-8);
          return (
            last.length === 8 && last.every((answer) => answer.status >= 200 && answer.status < 300)
          );
        });
        stop = true;
        await Promise.all(streams);
        const paidDuring = paid.slice(paidAtKill);
        const during = answers.slice(killedAt);
        const byStatus = new Map<number, number>();
        for (const answer of during)
          byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
        const slowest = Math.max(...during.map((answer) => answer.ms));
        const refused = during.filter((answer) => answer.status === 503);
        t.diagnostic(
          `failover: cluster healthy again ${Math.round(healthyAfterMs)} ms after SIGKILL; ` +
            `${during.length} answers after the kill: ${JSON.stringify(Object.fromEntries(byStatus))}; ` +
            `slowest ${Math.round(slowest)} ms; slowest 503 ${Math.round(Math.max(0, ...refused.map((answer) => answer.ms)))} ms`,
        );
        const paidByStatus = new Map<number, number>();
        for (const outcome of paidDuring) {
          paidByStatus.set(outcome.status, (paidByStatus.get(outcome.status) ?? 0) + 1);
        }
        const paidRefused = paidDuring.filter((outcome) => outcome.status === 503);
        t.diagnostic(
          `paid calls [status, error, ms]: ${JSON.stringify(paid.map((outcome) => [outcome.status, outcome.error ?? "", Math.round(outcome.ms)]))}; ${paidAtKill} before the kill`,
        );
        t.diagnostic(
          `failover, paid calls after the kill: ${JSON.stringify(Object.fromEntries(paidByStatus))}; ` +
            `slowest ${Math.round(Math.max(0, ...paidDuring.map((outcome) => outcome.ms)))} ms; ` +
            `slowest 503 ${Math.round(Math.max(0, ...paidRefused.map((outcome) => outcome.ms)))} ms`,
        );
        // No hang, no connection dropped: every answer is an accepted write or a 503. A 503 is
        // fast (the breaker, or a refused add); an accepted receipt may have waited for the worker
        // up to the route's store wait, which the failover delays.
        for (const answer of during) {
          assert.ok([200, 201, 202, 503].includes(answer.status), JSON.stringify(answer));
          const bound = answer.status === 503 ? ANSWER_BOUND_MS : STORE_WAIT_MS + ANSWER_BOUND_MS;
          assert.ok(answer.ms < bound, JSON.stringify(answer));
        }
        // A paid call is served (200), refused before anything is settled (503: the nonce ledger
        // cannot be reached), or, when the facilitator's answer never came (a stand-in in this
        // busy test process), 502: its fate is unknown, which the reconciliation below settles.
        for (const outcome of paidDuring) {
          const known =
            outcome.status === 200 ||
            outcome.status === 503 ||
            (outcome.status === 502 && outcome.error?.startsWith("facilitator_") === true);
          assert.ok(known, `${outcome.status} ${outcome.error}`);
          if (outcome.status === 503) assert.ok(outcome.ms < ANSWER_BOUND_MS, String(outcome.ms));
        }
        // A 200 was stored before it was answered: it is there, whichever side of the failover.
        // A 202 names a job that Redis' asynchronous replication may have lost with the master
        // (docs/service-decisions.md): the client's retry of the same transaction stores it once.
        const accepted = answers.filter((answer) => answer.status >= 200 && answer.status < 300);
        const stored = async (tx: string) => {
          const receipt = await fetch(`${web(0)}/receipts/${tx}`);
          await receipt.arrayBuffer();
          return receipt.status === 200;
        };
        let retried = 0;
        for (const answer of accepted) {
          if (answer.status === 200) {
            assert.ok(await stored(answer.tx), answer.tx);
            continue;
          }
          let found = false;
          for (let attempt = 0; attempt < 100 && !found; attempt += 1) {
            found = await stored(answer.tx);
            if (!found) await sleep(100);
          }
          if (found) continue;
          retried += 1;
          await until(`the retry of ${answer.tx} is stored`, async () => {
            const again = await settle(web(1), answer.tx);
            return again.status === 200 && (await stored(answer.tx));
          });
        }
        t.diagnostic(`202s lost with the master and stored by the client's retry: ${retried}`);
        t.diagnostic(`accepted ${accepted.length} of ${answers.length}; all stored`);
        // The settlement-intent journal is reconciled when a web process starts: restart both,
        // then every payment the facilitator settled has its receipt.
        for (const [index, old] of webs.entries()) {
          await stopServerProcess(old);
          webs[index] = await startServerProcess(env);
        }
        // One deadline for them all: the journal is reconciled at start and then periodically.
        const settledPaid: typeof paid = [];
        for (const outcome of paid) {
          if (await settledAtPeer(outcome.header)) settledPaid.push(outcome);
        }
        const settled = settledPaid.length;
        const missing = async () => {
          let count = 0;
          for (const outcome of settledPaid) {
            const receipt = await fetch(`${web(count)}/receipts/${outcome.tx}`);
            await receipt.arrayBuffer();
            if (receipt.status !== 200) count += 1;
          }
          return count;
        };
        await until(
          "every settled payment has its receipt",
          async () => (await missing()) === 0,
        ).catch(() => {});
        const lost = await missing();
        t.diagnostic(
          `paid calls: ${paid.length}, settled ${settled}, settled without a receipt ${lost}`,
        );
        assert.ok(settled > 0);
        assert.equal(lost, 0);
      });
    }
  });
}

/** Polls until `done` holds; only a run past the generous deadline fails. */
async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DRAIN_MS;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(50);
  }
}
