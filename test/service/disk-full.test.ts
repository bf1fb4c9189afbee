/**
 * A full disk under an embedded `receiptd serve` (issue 24, finding 1): the server's DATA_DIR
 * is a 40 MiB tmpfs (the test runs as root and mounts it), crystals are written until it is
 * full, and every refusal must be the documented 503 `crystal_store_unavailable`, no temporary
 * file may be left, evaluation-key issuance must answer 503 too, and `/health` must say the
 * store is full (503) while `/health/live` stays 200. Once space is freed it all recovers; a
 * crashed writer's temporary file is swept at the next start. Over real sockets, one process.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { KeyStore } from "../../src/access/api-keys.js";
import { nodeSha256 } from "../../src/access/evaluation/node-sha256.js";
import { sealCrystal, tenantHashOf } from "../../src/crystals/client.js";
import { solveProofOfWork } from "../../src/portable/proof-of-work.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "./support/server-process.js";

const run = promisify(execFile);
const MIB = 1024 * 1024;
const WRITES = 30;

/** Every file under `directory` whose name ends in `.tmp`. */
async function temporaryFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true });
  return entries.filter((name) => name.endsWith(".tmp"));
}

describe("a full disk under an embedded server", () => {
  let mount: string;
  let dataDir: string;
  let server: ServerProcess;
  let key: string;

  before(async () => {
    mount = await mkdtemp(join(tmpdir(), "receiptd-full-disk-"));
    await run("mount", ["-t", "tmpfs", "-o", "size=40m", "tmpfs", mount]);
    dataDir = join(mount, "data");
    await mkdir(dataDir);
    const keys = new KeyStore(new FsDocumentStore(dataDir), { defaultDailyCap: 1_000_000 });
    key = (await keys.create({ name: "disk-full" })).key;
    server = await startServerProcess({
      DATA_DIR: dataDir,
      CPU_THREADS: "1",
      STORE_MIN_FREE_BYTES: String(4 * MIB),
      EVALUATION_POW_BITS: "4",
    });
  });
  after(async () => {
    if (server !== undefined) await stopServerProcess(server);
    await run("umount", [mount]).catch(() => {});
    await rm(mount, { recursive: true, force: true });
  });

  const postCrystal = (index: number) => {
    const tenantHash = tenantHashOf(`disk-full tenant ${index}`);
    const envelope = sealCrystal({
      plaintext: Buffer.alloc(Math.floor(1.5 * MIB), index),
      key: Buffer.alloc(32, 7),
      tenantHash,
      createdAt: "2030-01-01T00:00:00Z",
    });
    return fetch(`${server.base}/crystals`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key },
      body: JSON.stringify(envelope),
    });
  };

  const issueEvaluationKey = async () => {
    const challenge = (await (await fetch(`${server.base}/keys/evaluation/challenge`)).json()) as {
      challenge: string;
      difficulty: number;
    };
    const nonce = solveProofOfWork(nodeSha256, challenge.challenge, challenge.difficulty);
    return fetch(`${server.base}/keys/evaluation`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ challenge: challenge.challenge, nonce }),
    });
  };

  test("writes are refused 503, nothing is left behind, and /health says so", async () => {
    const counts = new Map<string, number>();
    for (let index = 0; index < WRITES; index += 1) {
      const answer = await postCrystal(index);
      const body = (await answer.json()) as { error?: string };
      const outcome = `${answer.status} ${body.error ?? "stored"}`;
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
      if (answer.status === 503) assert.equal(answer.headers.get("retry-after"), "1");
    }
    const outcomes = Object.fromEntries(counts);
    process.stdout.write(`# disk-full writes: ${JSON.stringify(outcomes)}\n`);
    assert.deepEqual(Object.keys(outcomes).sort(), ["201 stored", "503 crystal_store_unavailable"]);
    assert.deepEqual(await temporaryFiles(dataDir), []);

    // What space the refused crystals left is taken by another tenant of the disk.
    const filler = join(mount, "filler");
    await writeFile(filler, Buffer.alloc(64 * MIB)).catch((error: NodeJS.ErrnoException) => {
      assert.equal(error.code, "ENOSPC");
    });
    // Issuance writes the spent-challenge journal, then the key: whichever write the full disk
    // refuses first names itself (an append may still fit in a journal's last page).
    const evaluation = await issueEvaluationKey();
    assert.equal(evaluation.status, 503);
    assert.ok(
      ["store_unavailable", "challenge_ledger_unavailable"].includes(
        ((await evaluation.json()) as { error: string }).error,
      ),
    );

    const health = await fetch(`${server.base}/health`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), { ok: false, store: "full" });
    const live = await fetch(`${server.base}/health/live`);
    assert.equal(live.status, 200);
    assert.deepEqual(await live.json(), { ok: true });

    // The operator frees space: readiness recovers without waiting for a write.
    await unlink(filler);
    const crystals = join(dataDir, "store", "crystals");
    const envelopes: string[] = [];
    for (const name of await readdir(crystals)) {
      if ((await stat(join(crystals, name))).size > MIB) envelopes.push(join(crystals, name));
    }
    for (const path of envelopes.slice(0, 6)) await unlink(path);
    const recovered = await fetch(`${server.base}/health`);
    assert.equal(recovered.status, 200);
    assert.equal((await postCrystal(1000)).status, 201);
  });

  test("a crashed writer's temporary files are swept at the next start", async () => {
    // A process that has exited: its pid names the leftovers of a writer that died.
    const gone = spawn(process.execPath, ["-e", ""]);
    await once(gone, "exit");
    const crystals = join(dataDir, "store", "crystals");
    await writeFile(join(crystals, `x.json.${gone.pid}.0123456789ab.tmp`), Buffer.alloc(MIB));
    server.child.kill("SIGKILL");
    await once(server.child, "exit");
    server = await startServerProcess({ DATA_DIR: dataDir, CPU_THREADS: "1" });
    assert.deepEqual(await temporaryFiles(join(dataDir, "store")), []);
  });
});
