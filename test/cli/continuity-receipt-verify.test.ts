/**
 * The built bundle CLIs, run as users run them: a separate node process, JSON on stdout,
 * exit codes 0/1/2 (verifier.md §1.1).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { corpusBytes, corpusPath } from "../support/corpus.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = (name: string) => join(root, "dist/src/cli", `${name}.js`);
const scratch = mkdtempSync(join(tmpdir(), "receiptd-cli-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

for (const name of ["continuity-receipt-verify", "receiptd"]) {
  const source = join(root, "src/cli", `${name}.ts`);
  assert.ok(
    (statSync(bin(name), { throwIfNoEntry: false })?.mtimeMs ?? 0) >= statSync(source).mtimeMs,
    `${bin(name)} is missing or older than its source: run npm run build`,
  );
}

function run(name: string, args: string[]) {
  const result = spawnSync(process.execPath, [bin(name), ...args], { encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("continuity-receipt-verify (built)", () => {
  test("a TRUSTED bundle exits 0 and prints the result as Python does", () => {
    const out = run("continuity-receipt-verify", [corpusPath("vectors/02_happy_full.json")]);
    assert.equal(out.status, 0);
    const expected = corpusBytes("expected/vectors/02_happy_full.json").toString("utf8");
    assert.equal(out.stdout.trim(), expected.trim());
  });

  test("an UNTRUSTED bundle exits 1", () => {
    const out = run("continuity-receipt-verify", [corpusPath("vectors/03_tampered_body.json")]);
    assert.equal(out.status, 1);
    assert.match(out.stdout, /"verdict": "UNTRUSTED"/);
  });

  test("--require-anchor makes a bundle without anchors PROVISIONAL", () => {
    const out = run("continuity-receipt-verify", [
      corpusPath("vectors/10b_anchor_missing.json"),
      "--require-anchor",
    ]);
    assert.equal(out.status, 1);
    assert.match(out.stdout, /"anchor_missing"/);
  });

  test("an unreadable bundle exits 2 with a message and no JSON", () => {
    const out = run("continuity-receipt-verify", [join(scratch, "missing.json")]);
    assert.equal(out.status, 2);
    assert.equal(out.stdout, "");
    assert.match(out.stderr, /^error: cannot read bundle: /);
  });

  test("a file over 8 MiB is refused before parsing; exactly 8 MiB is read", () => {
    const limit = 8 * 1024 * 1024;
    const tooLarge = join(scratch, "large.json");
    writeFileSync(tooLarge, Buffer.alloc(limit + 1, 0x20));
    const refused = run("continuity-receipt-verify", [tooLarge]);
    assert.equal(refused.status, 1);
    assert.deepEqual(JSON.parse(refused.stdout), {
      verdict: "UNTRUSTED",
      errors: [{ code: "bundle_too_large", detail: `${limit + 1} bytes exceeds limit ${limit}` }],
    });
    const atLimit = join(scratch, "at-limit.json");
    const body = Buffer.alloc(limit, 0x20);
    body.write("{}", 0);
    writeFileSync(atLimit, body);
    const read = run("continuity-receipt-verify", [atLimit]);
    assert.equal(read.status, 1);
    assert.equal(JSON.parse(read.stdout).errors[0].code, "version_unsupported");
  });

  test("a revocation list that cannot be used stops before the bundle is read", () => {
    const badDocument = join(scratch, "bad-revocations.json");
    writeFileSync(badDocument, '{"kind":"something-else","version":1,"statements":[]}');
    const out = run("continuity-receipt-verify", [
      join(scratch, "never-read.json"),
      "--revocations",
      badDocument,
    ]);
    assert.equal(out.status, 1);
    const printed = JSON.parse(out.stdout);
    assert.equal(printed.verdict, "INSUFFICIENT_EVIDENCE");
    assert.equal(printed.errors[0].code, "bad_revocations_document");
  });

  test("external revocations are counted in the summary", () => {
    const out = run("continuity-receipt-verify", [
      corpusPath("vectors/02_happy_full.json"),
      "--revocations",
      corpusPath("vectors/verification/12_revoked_issuer.revocations.json"),
    ]);
    assert.equal(out.status, 0);
    assert.equal(JSON.parse(out.stdout).summary.revocations_external, 1);
  });

  test("usage errors exit 2", () => {
    assert.equal(run("continuity-receipt-verify", []).status, 2);
    assert.equal(run("continuity-receipt-verify", ["a.json", "--unknown"]).status, 2);
  });

  test("an unknown option is one plain line and the usage", () => {
    const out = run("continuity-receipt-verify", ["a.json", "--unknown"]);
    assert.equal(out.stdout, "");
    assert.equal(
      out.stderr,
      "error: unknown option '--unknown'\n" +
        "usage: continuity-receipt-verify <bundle> [--require-anchor] [--revocations PATH|URL]...\n",
    );
  });

  test("--help prints the usage and exits 0", () => {
    for (const flag of ["--help", "-h"]) {
      const out = run("continuity-receipt-verify", [flag]);
      assert.equal(out.status, 0, out.stderr);
      assert.match(out.stdout, /^usage: continuity-receipt-verify <bundle> /);
      assert.match(out.stdout, /Exit status: 0 TRUSTED/);
    }
  });
});

describe("receiptd (built)", () => {
  test("receiptd verify runs the same code as continuity-receipt-verify", () => {
    const args = [corpusPath("vectors/17b_offeree_mismatch.json")];
    const direct = run("continuity-receipt-verify", args);
    const viaReceiptd = run("receiptd", ["verify", ...args]);
    assert.equal(viaReceiptd.status, direct.status);
    assert.equal(viaReceiptd.stdout, direct.stdout);
  });

  test("--help lists the commands and exits 0; an unknown command exits 2", () => {
    const help = run("receiptd", ["--help"]);
    assert.equal(help.status, 0);
    for (const command of ["verify", "verify-receipt", "anchor"]) {
      assert.match(help.stdout, new RegExp(`\\n  ${command} `));
    }
    assert.equal(run("receiptd", ["frobnicate"]).status, 2);
  });

  test("each tool's --help and usage errors speak of the receiptd subcommand", () => {
    for (const [command, usage] of [
      ["verify", "usage: receiptd verify <bundle>"],
      ["verify-receipt", "usage: receiptd verify-receipt <receipt>"],
      ["anchor", "usage: receiptd anchor verify <proof>"],
    ] as const) {
      const help = run("receiptd", [command, "--help"]);
      assert.equal(help.status, 0, `${command}: ${help.stderr}`);
      assert.ok(help.stdout.startsWith(usage), `${command}: ${help.stdout}`);
      assert.doesNotMatch(help.stdout, /continuity-receipt-/);
      const refused = run("receiptd", [command, "x", "--nope"]);
      assert.equal(refused.status, 2);
      assert.ok(
        refused.stderr.startsWith(`error: unknown option '--nope'\n${usage}`),
        refused.stderr,
      );
    }
  });

  test("receiptd anchor verify takes the corpus's headers.json with --headers", () => {
    const out = run("receiptd", [
      "anchor",
      "verify",
      corpusPath("vectors/anchor/hello-world.txt.ots"),
      "--digest",
      "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340",
      "--headers",
      corpusPath("vectors/anchor/headers.json"),
      "--json",
    ]);
    assert.equal(out.status, 0, out.stderr);
    assert.equal(JSON.parse(out.stdout).confirmed.block_height, 358391);
  });

  test("receiptd anchor verify checks the OpenTimestamps fixture", () => {
    const headers = JSON.parse(corpusBytes("vectors/anchor/headers.json").toString("utf8"));
    const out = run("receiptd", [
      "anchor",
      "verify",
      corpusPath("vectors/anchor/hello-world.txt.ots"),
      "--digest",
      "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340",
      "--header",
      headers.headers["358391"],
      "--height",
      "358391",
      "--json",
    ]);
    assert.equal(out.status, 0);
    assert.equal(JSON.parse(out.stdout).status, "verified");
  });
});
