/**
 * scripts/smoke.mjs, the served smoke test the README names and CI runs on every Node line
 * (scripts/node-lines.mjs): it must pass against this build and leave no DATA_DIR behind.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("scripts/smoke.mjs", () => {
  test("starts receiptd serve, verifies a bundle as the reference does, stops it", () => {
    const temp = mkdtempSync(join(tmpdir(), "receiptd-smoke-test-"));
    try {
      const run = spawnSync(process.execPath, ["scripts/smoke.mjs"], {
        cwd: ROOT,
        env: { ...process.env, TMPDIR: temp },
        encoding: "utf8",
        timeout: 120_000,
      });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(
        run.stdout,
        `smoke: node ${process.version}: receiptd serve started, verified ` +
          "vectors/02_happy_full.json (TRUSTED, as the reference), stopped cleanly\n",
      );
      assert.deepEqual(readdirSync(temp), [], "its DATA_DIR is removed");
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  });

  test("a corpus that is not there: exit 1 and one line saying so", () => {
    const run = spawnSync(process.execPath, ["scripts/smoke.mjs", "--corpus", "/nonexistent"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /^smoke: node v[\d.]+: ENOENT: no such file or directory.*\n$/);
  });
});

describe("scripts/node-lines.mjs", () => {
  test("refuses lines that are not major versions before installing anything", () => {
    const run = spawnSync(process.execPath, ["scripts/node-lines.mjs", "--lines", "22,lts"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    assert.equal(run.status, 2);
    assert.equal(
      run.stderr,
      "node-lines: --lines takes major versions, e.g. 22,24; got '22,lts'\n",
    );
  });
});
