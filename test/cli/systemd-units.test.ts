/**
 * `receiptd systemd-units` (docs/operations.md, "Processes under systemd"): the units of this
 * installation by default, written with `--out`, and usage errors answered as every other
 * command answers them (issue 37: the script it replaces printed a raw
 * ERR_PARSE_ARGS_UNKNOWN_OPTION stack for `--help` and for an unknown option).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { installationRoot, main, USAGE } from "../../src/cli/systemd-units.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
const scratch = mkdtempSync(join(tmpdir(), "receiptd-systemd-units-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

async function run(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}

describe("receiptd systemd-units", () => {
  test("--help prints the usage and the options, exit 0", async () => {
    for (const flag of ["--help", "-h"]) {
      const { code, stdout, stderr } = await run([flag]);
      assert.equal(code, 0);
      assert.equal(stderr, "");
      assert.ok(stdout.startsWith(`${USAGE}\n`));
      for (const option of ["--dir", "--node", "--user", "--env-file", "--out"]) {
        assert.match(stdout, new RegExp(`^ {2}${option} `, "m"));
      }
    }
  });

  test("an unknown option, a missing value or an argument: one line and the usage, exit 2", async () => {
    for (const [argv, line] of [
      [["--bogus"], "error: unknown option '--bogus'"],
      [["--dir"], "error: Option '--dir <value>' argument missing"],
      [["web"], "error: unexpected argument 'web'"],
    ] as const) {
      const { code, stdout, stderr } = await run([...argv]);
      assert.equal(code, 2, argv.join(" "));
      assert.equal(stdout, "");
      assert.equal(stderr, `${line}\n${USAGE}\n`);
    }
  });

  test("by default, units for this installation: its files, its documentation", async () => {
    assert.equal(installationRoot(), ROOT);
    const { code, stdout } = await run([]);
    assert.equal(code, 0);
    assert.deepEqual(
      [...stdout.matchAll(/^# (\S+)$/gm)].map((match) => match[1]),
      ["receiptd-web.service", "receiptd-worker.service"],
    );
    assert.match(stdout, new RegExp(`^WorkingDirectory=${ROOT}$`, "m"));
    const documentation = /^Documentation=file:\/\/(.*)$/m.exec(stdout)?.[1];
    assert.equal(documentation, join(ROOT, "docs/operations.md"));
    assert.ok(existsSync(documentation!));
  });

  test("--dir and the other options go into the units; --out writes one file each", async () => {
    const out = join(scratch, "units");
    const { code, stdout } = await run([
      "--dir",
      "/srv/receiptd/",
      "--node",
      "/usr/local/bin/node",
      "--user",
      "svc",
      "--env-file",
      "/etc/svc.env",
      "--out",
      out,
    ]);
    assert.equal(code, 0);
    assert.equal(
      stdout,
      `${join(out, "receiptd-web.service")}\n${join(out, "receiptd-worker.service")}\n`,
    );
    assert.deepEqual(readdirSync(out).sort(), ["receiptd-web.service", "receiptd-worker.service"]);
    const web = readFileSync(join(out, "receiptd-web.service"), "utf8");
    for (const line of [
      "Documentation=file:///srv/receiptd/docs/operations.md",
      "WorkingDirectory=/srv/receiptd",
      "User=svc",
      "Group=svc",
      "EnvironmentFile=/etc/svc.env",
      "ExecStart=/usr/local/bin/node --max-semi-space-size=2 dist/src/cli/receiptd.js serve",
    ]) {
      assert.ok(web.split("\n").includes(line), line);
    }
  });
});
