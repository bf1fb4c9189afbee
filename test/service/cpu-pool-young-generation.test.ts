/**
 * The main thread and the CPU pool's workers size their young generations independently: a
 * process started with a small `--max-semi-space-size` (as `npm start` starts `receiptd serve`)
 * keeps it for the main thread, while each worker grows to `WORKER_YOUNG_GENERATION_MB`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { WORKER_YOUNG_GENERATION_MB } from "../../src/service/cpu-pool.js";
import { fixtureTaskModule } from "./support/service.js";

const POOL = new URL("../../src/service/cpu-pool.ts", import.meta.url).href;
const TASKS = new URL("../../src/service/endpoints/verify/contract.ts", import.meta.url).href;
const FIXTURE = fixtureTaskModule("young-generation-worker");

const SCRIPT = `
import { CpuPool } from ${JSON.stringify(POOL)};
import { verifyTask } from ${JSON.stringify(TASKS)};
import { newSpaceMiB } from ${JSON.stringify(FIXTURE)};
const pool = new CpuPool({
  threads: 1,
  maxQueue: 1,
  workerData: {},
  taskModules: { verify: ${JSON.stringify(FIXTURE)} },
});
const worker = await pool.run(verifyTask, { body: new ArrayBuffer(0), requireAnchor: false, receipt: false });
await pool.close();
console.log(JSON.stringify({ worker: worker.newSpaceMiB, main: newSpaceMiB() }));
`;

test("a process-wide --max-semi-space-size sizes the main thread only", () => {
  const child = spawnSync(
    process.execPath,
    ["--max-semi-space-size=2", "--import", "tsx", "--input-type=module", "-e", SCRIPT],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(child.status, 0, child.stderr);
  const sizes = JSON.parse(child.stdout) as { worker: number; main: number };
  // Two semi-spaces of 2 MiB for the main thread; the worker's limit is its whole new space.
  assert.equal(sizes.main, 4);
  assert.equal(sizes.worker, WORKER_YOUNG_GENERATION_MB);
});
