/**
 * kill -9 of an embedded `receiptd serve` in the middle of a stream of `POST /payment-receipts`
 * (issue 33: receipts are group-committed, many acknowledged by one log sync). Every receipt
 * the server acknowledged (200 `stored: true`) must be readable after a restart with the
 * digest it was acknowledged with, once: a repeat answers `idempotent: true` with the same
 * receipt, and the store holds one document per transaction.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { startServerProcess, stopServerProcess } from "./support/server-process.js";
import { temporaryDataDir } from "./support/service.js";

const STREAMS = 32;

type Stored = { receipt_digest: string };
const KILL_AFTER = 400;

function settlement(n: number): string {
  const tx = createHash("sha256").update(`ingestion crash ${n}`).digest("hex");
  return JSON.stringify({
    tx: `0x${tx}`,
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: String(1000 + n),
    payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    path: "/verify",
  });
}

describe("kill -9 during a stream of POST /payment-receipts", () => {
  let dataDir: string;
  after(() => rm(dataDir, { recursive: true, force: true }));

  test("every acknowledged receipt is readable after the restart, with its digest, once", async () => {
    dataDir = await temporaryDataDir();
    const env = { DATA_DIR: dataDir, CPU_THREADS: "1" };
    const server = await startServerProcess(env);
    const token = (await readFile(join(dataDir, "internal.token"), "utf8")).trim();
    const headers = { "content-type": "application/json", "x-internal-token": token };
    const acknowledged = new Map<string, string>();
    let next = 0;
    let killed = false;
    const stream = async () => {
      while (!killed) {
        const body = settlement(next++);
        try {
          const response = await fetch(`${server.base}/payment-receipts`, {
            method: "POST",
            headers,
            body,
          });
          const answer = (await response.json()) as {
            stored?: boolean;
            tx?: string;
            digest?: string;
          };
          if (response.status === 200 && answer.stored === true) {
            acknowledged.set(answer.tx!, answer.digest!);
          }
        } catch {
          // The connection died with the server: that receipt was never acknowledged.
        }
        if (acknowledged.size >= KILL_AFTER && !killed) {
          killed = true;
          server.child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: STREAMS }, stream));
    assert.ok(acknowledged.size >= KILL_AFTER);
    await stopServerProcess(server);

    const restarted = await startServerProcess(env);
    try {
      // The restart replayed the log into the document files: every acknowledged receipt is
      // there; a sample is read over HTTP too (anonymous reads are capped per address).
      const onDisk = new FsDocumentStore(dataDir);
      for (const [tx, digest] of acknowledged) {
        const bytes = await onDisk.get("settlements", tx);
        assert.ok(bytes !== null, `acknowledged ${tx} must survive`);
        const document = JSON.parse(Buffer.from(bytes).toString("utf8")) as Stored;
        assert.equal(document.receipt_digest, digest);
      }
      for (const [tx, digest] of [...acknowledged].slice(0, 10)) {
        const stored = await fetch(`${restarted.base}/receipts/${tx}`);
        assert.equal(stored.status, 200);
        assert.equal(((await stored.json()) as Stored).receipt_digest, digest);
      }
      const [tx, digest] = [...acknowledged][0]!;
      const n = [...Array(next).keys()].find((i) => JSON.parse(settlement(i)).tx === tx)!;
      const repeat = await fetch(`${restarted.base}/payment-receipts`, {
        method: "POST",
        headers,
        body: settlement(n),
      });
      const answer = (await repeat.json()) as { idempotent?: boolean; digest?: string };
      assert.deepEqual([repeat.status, answer.idempotent, answer.digest], [200, true, digest]);
      const files = await readdir(join(dataDir, "store", "settlements"));
      const documents = files.filter((name) => name.endsWith(".json"));
      assert.equal(new Set(documents).size, documents.length);
      assert.ok(documents.length >= acknowledged.size);
    } finally {
      await stopServerProcess(restarted);
    }
  });
});
