import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { sha256Digest } from "../../src/verifier/crypto/digest.js";
import { dumpJson } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { startTestService, type TestService } from "../service/support/service.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const cliPath = fileURLToPath(
  new URL("../../src/cli/continuity-receipt-verify-receipt.ts", import.meta.url),
);
const vectors = fileURLToPath(
  new URL("../../../shared/corpus/vectors/verification/", import.meta.url),
);
const expectedDir = new URL("../../../shared/corpus/expected/verification/", import.meta.url);
const vector = (name: string): string => join(vectors, name);

const VALID_DIGEST = "sha256:f0c7de6ac268de40a5f08deb209a9d8bc92d921b465b6ab0dc812c193a44bb9e";

const workDir = mkdtempSync(join(tmpdir(), "cli-verify-receipt-"));
after(() => rmSync(workDir, { recursive: true, force: true }));

function tempFile(name: string, content: Uint8Array | string): string {
  const path = join(workDir, name);
  writeFileSync(path, content);
  return path;
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], script = cliPath): Run {
  const { status, stdout, stderr } = spawnSync(
    process.execPath,
    ["--import", "tsx", script, ...args],
    { cwd: repoRoot, encoding: "utf8" },
  );
  return { status, stdout, stderr };
}

function assertJsonOutput(run: Run, expected: string): void {
  const normalise = (text: string): string => dumpJson(parseJson(text), { indent: 2 });
  assert.equal(normalise(run.stdout), normalise(expected));
  assert.ok(run.stdout.endsWith("}\n"));
}

const expectedOutput = (name: string): string => readFileSync(new URL(name, expectedDir), "utf8");

describe("continuity-receipt-verify-receipt", () => {
  test("a valid receipt with its bundle → exit 0, the reference's output", () => {
    const run = runCli([vector("01_valid.json"), "--bundle", vector("bundle.json")]);
    assert.equal(run.status, 0, run.stderr);
    assertJsonOutput(run, expectedOutput("01_valid.json"));
    assert.equal(run.stdout, `${dumpJson(parseJson(run.stdout), { indent: 2 })}\n`);
  });

  test("an invalid receipt → exit 1", () => {
    const run = runCli([vector("03_tampered_verdict.json")]);
    assert.equal(run.status, 1, run.stderr);
    assertJsonOutput(run, expectedOutput("03_tampered_verdict.json"));
  });

  test("a revoked issuer, with a revocation document → exit 1", () => {
    const run = runCli([
      vector("12_revoked_issuer.json"),
      "--bundle",
      vector("bundle.json"),
      "--revocations",
      vector("12_revoked_issuer.revocations.json"),
    ]);
    assert.equal(run.status, 1, run.stderr);
    assertJsonOutput(run, expectedOutput("12_revoked_issuer.json"));
  });

  test("revocations from several documents are merged", () => {
    const run = runCli([
      vector("21_valid_statement_after_verified_at.json"),
      "--revocations",
      vector("21_valid_statement_after_verified_at.revocations.json"),
      "--revocations",
      vector("12_revoked_issuer.revocations.json"),
    ]);
    assert.equal(run.status, 1, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).errors, ["key_revoked"]);
  });

  test("a wrong bundle → bundle_digest_mismatch, exit 1", () => {
    const run = runCli([vector("04_wrong_bundle.json"), "--bundle", vector("other_bundle.json")]);
    assert.equal(run.status, 1, run.stderr);
    assertJsonOutput(run, expectedOutput("04_wrong_bundle.json"));
  });

  test("--digest prints the receipt digest", () => {
    const run = runCli([vector("01_valid.json"), "--digest"]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${VALID_DIGEST}\n`);
  });

  test("--canonical writes the signed bytes and prints their digest", () => {
    const out = join(workDir, "canonical.json");
    const run = runCli([vector("01_valid.json"), "--canonical", out]);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${VALID_DIGEST}\n`);
    const written = readFileSync(out);
    assert.equal(sha256Digest(written), VALID_DIGEST);
    assert.ok(!written.toString("utf8").includes('"sig"'));
  });

  test("a receipt that is not valid JSON → exit 2", () => {
    const run = runCli([tempFile("bad.json", '{"kind":')]);
    assert.equal(run.status, 2);
    assert.equal(run.stdout, "");
    assert.match(run.stderr, /^error: receipt is not valid JSON: /);
  });

  test("an unreadable receipt → exit 2", () => {
    const run = runCli([join(workDir, "absent.json")]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /^error: cannot read receipt: ENOENT: no such file or directory/);
    assert.equal(run.stderr.split("\n").length, 2, "one line");
  });

  test("--digest of a receipt that is not an object → exit 2", () => {
    const run = runCli([tempFile("list.json", "[]"), "--digest"]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /^error: receipt is not a JSON object/);
  });

  test("a receipt that is not an object is verified as not_an_object", () => {
    const run = runCli([tempFile("list.json", "[]")]);
    assert.equal(run.status, 1);
    assert.deepEqual(JSON.parse(run.stdout).errors, ["not_an_object"]);
  });

  test("a bad revocation document → {valid:false, errors:[code]}, exit 1", () => {
    const run = runCli([vector("01_valid.json"), "--revocations", vector("01_valid.json")]);
    assert.equal(run.status, 1);
    assertJsonOutput(run, '{"valid":false,"errors":["bad_revocations_document"]}');
    assert.match(run.stderr, /^error: .*01_valid\.json: kind is 'continuity-receipt-verification'/);
  });

  test("an unreachable revocation source → revocations_unreachable, exit 1", () => {
    const run = runCli([vector("01_valid.json"), "--revocations", join(workDir, "absent.json")]);
    assert.equal(run.status, 1);
    assertJsonOutput(run, '{"valid":false,"errors":["revocations_unreachable"]}');
  });

  test("a bundle that is not strict JSON → exit 2 (a BOM included)", () => {
    const bundleWithBom = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      readFileSync(vector("bundle.json")),
    ]);
    for (const bundle of [
      tempFile("bom.json", bundleWithBom),
      tempFile("dup.json", '{"a":1,"a":1}'),
    ]) {
      const run = runCli([vector("01_valid.json"), "--bundle", bundle]);
      assert.equal(run.status, 2);
      assert.equal(run.stdout, "");
      assert.match(run.stderr, /^error: bundle is not valid JSON: /);
    }
  });

  test("an unreadable bundle → exit 2", () => {
    const run = runCli([vector("01_valid.json"), "--bundle", join(workDir, "absent.json")]);
    assert.equal(run.status, 2);
    assert.match(run.stderr, /^error: cannot read bundle: .*ENOENT/);
  });

  test("usage errors → exit 2", () => {
    for (const args of [
      [],
      ["--bogus", vector("01_valid.json")],
      [vector("01_valid.json"), "extra"],
    ]) {
      const run = runCli(args);
      assert.equal(run.status, 2);
      assert.match(run.stderr, /^error: .*\nusage: continuity-receipt-verify-receipt/);
    }
  });

  test("runs when started through a symlink, as npm installs bins", () => {
    const link = join(workDir, "continuity-receipt-verify-receipt");
    symlinkSync(cliPath, link);
    const run = runCli([vector("01_valid.json"), "--digest"], link);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${VALID_DIGEST}\n`);
  });
});

/** The child is spawned asynchronously: the service it asks lives in this process. */
async function runCliAsync(args: string[]): Promise<Run> {
  const child = promisify(execFile)(process.execPath, ["--import", "tsx", cliPath, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  try {
    const { stdout, stderr } = await child;
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    return { status: failed.code ?? null, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("continuity-receipt-verify-receipt --revocations <service>/revocations/<did> (real HTTP)", () => {
  /** The issuer of the corpus's verification receipts. */
  const ISSUER = "did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK";
  let service: TestService;
  let base: string;
  before(async () => {
    service = await startTestService({}, { anonymous: true });
    base = await service.app.listen({ port: 0, host: "127.0.0.1" });
  });
  after(() => service.close());

  test("an issuer that never rotated: 404 no_document is an empty list, the receipt valid", async () => {
    const answer = await fetch(`${base}/revocations/${ISSUER}`);
    assert.equal(answer.status, 404);
    assert.deepEqual(await answer.json(), { error: "no_document" });
    const run = await runCliAsync([
      vector("01_valid.json"),
      "--bundle",
      vector("bundle.json"),
      "--revocations",
      `${base}/revocations/${ISSUER}`,
    ]);
    assert.equal(run.status, 0, run.stderr);
    assertJsonOutput(run, expectedOutput("01_valid.json"));
  });

  test("once the service holds the issuer's document, the revocation is seen", async () => {
    const store = service.app.documentStore;
    const current = await store.get("revocations", ISSUER);
    const document = readFileSync(vector("12_revoked_issuer.revocations.json"));
    assert.ok(await store.replace("revocations", ISSUER, current, document));
    const run = await runCliAsync([
      vector("12_revoked_issuer.json"),
      "--bundle",
      vector("bundle.json"),
      "--revocations",
      `${base}/revocations/${ISSUER}`,
    ]);
    assert.equal(run.status, 1, run.stderr);
    assertJsonOutput(run, expectedOutput("12_revoked_issuer.json"));
  });

  test("a 404 that is not the service's no_document stays unreachable", async () => {
    const run = await runCliAsync([
      vector("01_valid.json"),
      "--revocations",
      `${base}/revocation/${ISSUER}`,
    ]);
    assert.equal(run.status, 1);
    assertJsonOutput(run, '{"valid":false,"errors":["revocations_unreachable"]}');
    assert.match(run.stderr, /answered HTTP 404/);
  });
});
