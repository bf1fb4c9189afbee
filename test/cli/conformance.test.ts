/**
 * `receiptd conformance run`, built and run as a user runs it: our own CLIs over the whole
 * corpus graded here, a real referee (`receiptd serve` with a corpus) on 127.0.0.1, and
 * verifiers that lie, hang, or are plain executables, over a small corpus cut from the real one.
 */
import assert from "node:assert/strict";
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { staleReason } from "../../scripts/ensure-build.mjs";
import { conformanceReportProblems } from "../../src/conformance/report.js";
import { sha256Digest } from "../../src/verifier/crypto/digest.js";
import { canonicalBytes, canonicalText } from "../../src/verifier/json/canonical.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isObject, type JsonObject } from "../../src/verifier/json/value.js";
import { referenceSubmission } from "../conformance/reference-submission.js";
import { CORPUS_DIR, corpusManifest, corpusPath, type HostileIndex } from "../support/corpus.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const RECEIPTD = join(root, "dist/src/cli/receiptd.js");
const VERIFY_CLI = join(root, "dist/src/cli/continuity-receipt-verify.js");
const scratch = mkdtempSync(join(tmpdir(), "receiptd-conformance-cli-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const stale = staleReason(root);
assert.equal(stale, null, `dist/ is not current (${stale}): run npm run build`);

/** The environment of every run: no CORPUS_DIR unless a test gives one. */
const baseEnv: NodeJS.ProcessEnv = { ...process.env };
delete baseEnv.CORPUS_DIR;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

async function receiptd(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const child = spawn(process.execPath, [RECEIPTD, ...args], {
    env: { ...baseEnv, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const [status] = (await once(child, "close")) as [number | null];
  return { status, stdout, stderr };
}

function readJson(path: string): JsonObject {
  const value = parseJson(readFileSync(path));
  assert.ok(isObject(value));
  return value;
}

let files = 0;
const scratchFile = (name: string) => join(scratch, `${files++}-${name}`);

/** A corpus cut from the real one: the named vectors and hostile cases, with their files. */
function smallCorpus(bundles: string[], receipts: string[], hostileCases: number): string {
  const dir = join(scratch, `corpus-${files++}`);
  const copy = (relative: string) => {
    mkdirSync(dirname(join(dir, relative)), { recursive: true });
    copyFileSync(corpusPath(relative), join(dir, relative));
  };
  const write = (relative: string, value: unknown) => {
    mkdirSync(dirname(join(dir, relative)), { recursive: true });
    writeFileSync(join(dir, relative), JSON.stringify(value, null, 2));
  };
  type Entries = { vectors: Record<string, unknown>[] };
  const bundleManifest = corpusManifest<Entries>("vectors/manifest.json");
  const bundleEntries = bundleManifest.vectors.filter((v) => bundles.includes(String(v.file)));
  write("vectors/manifest.json", { ...bundleManifest, vectors: bundleEntries });
  for (const entry of bundleEntries) copy(`vectors/${entry.file}`);
  const receiptManifest = corpusManifest<Entries>("vectors/verification/manifest.json");
  const receiptEntries = receiptManifest.vectors.filter((v) => receipts.includes(String(v.file)));
  write("vectors/verification/manifest.json", { ...receiptManifest, vectors: receiptEntries });
  for (const entry of receiptEntries) {
    for (const member of ["file", "bundle_file", "revocations_file"]) {
      if (typeof entry[member] === "string") copy(`vectors/verification/${entry[member]}`);
    }
  }
  const hostileManifest = corpusManifest<Entries>("hostile/manifest.json");
  const index = corpusManifest<HostileIndex>("hostile/index.json");
  const cases = index.cases.slice(0, hostileCases);
  write("hostile/manifest.json", {
    ...hostileManifest,
    vectors: hostileManifest.vectors.slice(0, hostileCases),
  });
  write("hostile/index.json", { ...index, cases });
  for (const entry of cases) copy(`hostile/${entry.file}`);
  return dir;
}

const SMALL_BUNDLES = ["01_happy_minimal.json", "03_tampered_body.json", "10b_anchor_missing.json"];
const SMALL_RECEIPTS = ["01_valid.json", "04_wrong_bundle.json", "12_revoked_issuer.json"];
const small = smallCorpus(SMALL_BUNDLES, SMALL_RECEIPTS, 10);

/** A verifier script named so the receipt CLI is found beside it, as the reference tool does. */
function fakeVerifier(prefix: string, bundleBody: string, receiptBody: string): string {
  const dir = join(scratch, `${prefix}-${files++}`);
  mkdirSync(dir);
  const bundle = join(dir, `${prefix}-continuity-receipt-verify.mjs`);
  writeFileSync(bundle, bundleBody);
  writeFileSync(join(dir, `${prefix}-continuity-receipt-verify-receipt.mjs`), receiptBody);
  return bundle;
}

describe("receiptd conformance run: our own CLIs over the whole corpus, graded here", () => {
  test("CONFORMANT, with a verified report over what the reference answered", {
    timeout: 900_000,
  }, async () => {
    const reportFile = scratchFile("report.json");
    const submissionFile = scratchFile("submission.json");
    const run = await receiptd(
      ["conformance", "run", "--report", reportFile, "--submission", submissionFile],
      { CORPUS_DIR },
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^ {2}bundles {16}40\/40$/m);
    assert.ok(
      run.stdout.includes(
        "the vectors its manifests pin: bundles 40 (vectors/manifest.json), " +
          "verification_receipts 21 (vectors/verification/manifest.json), " +
          "hostile_inputs 208 (hostile/manifest.json)\n",
      ),
      "the corpus line names the manifest each section is graded from",
    );
    assert.match(run.stdout, /^ {2}verification_receipts {2}21\/21$/m);
    assert.match(run.stdout, /^ {2}hostile_inputs {9}208\/208$/m);
    assert.match(run.stdout, /; 0 without a usable answer\n/);
    assert.match(run.stdout, /^graded {4}locally, signed with a one-off key \(did:key:z6Mk\w+\)$/m);
    assert.match(run.stdout, /^report {4}verified: /m);
    assert.match(run.stdout, /\nverdict {3}CONFORMANT\n$/);

    const report = readJson(reportFile);
    const submission = readJson(submissionFile);
    assert.deepEqual(conformanceReportProblems(report), []);
    assert.equal(report.get("verdict"), "CONFORMANT");
    assert.equal(report.get("submission_digest"), sha256Digest(canonicalBytes(submission)));
    assert.equal(
      canonicalText(submission.get("implementation") ?? null),
      '{"language":"typescript","name":"receiptd","version":"0.1.0"}',
    );
    // Every answer, codes included, is what the reference's recorded outputs say.
    assert.equal(
      canonicalText(submission.get("results") ?? null),
      canonicalText(referenceSubmission().get("results") ?? null),
    );
  });
});

describe("receiptd conformance run against a referee on 127.0.0.1", () => {
  let server: ChildProcessByStdio<null, Readable, Readable>;
  let origin: string;
  let key: string;
  const dataDir = join(scratch, "referee-data");

  before(async () => {
    const created = await receiptd(["keys", "create", "--name", "submitter", "--json"], {
      DATA_DIR: dataDir,
    });
    assert.equal(created.status, 0, created.stderr);
    key = (JSON.parse(created.stdout) as { key: string }).key;
    server = spawn(process.execPath, [RECEIPTD, "serve", "--port", "0"], {
      env: { ...baseEnv, DATA_DIR: dataDir, CORPUS_DIR: small, CPU_THREADS: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    origin = await new Promise<string>((resolve, reject) => {
      let output = "";
      server.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match?.[1]) resolve(match[1]);
      });
      server.once("exit", (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
    });
  });
  after(async () => {
    server.kill("SIGTERM");
    if (server.exitCode === null) await once(server, "exit");
  });

  test("the referee grades, the report's issuer is the one its /info names", async () => {
    const reportFile = scratchFile("referee-report.json");
    const run = await receiptd([
      "conformance",
      "run",
      "--corpus",
      small,
      "--referee",
      origin,
      "--key",
      key,
      "--report",
      reportFile,
    ]);
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const info = (await (await fetch(`${origin}/info`)).json()) as { issuer: string };
    assert.ok(run.stdout.includes(`graded    by ${origin}/ (its /info names ${info.issuer})\n`));
    assert.match(run.stdout, /^ {2}hostile_inputs {9}10\/10$/m);
    assert.match(run.stdout, /\nverdict {3}CONFORMANT\n$/);
    const report = readJson(reportFile);
    assert.equal(report.get("issuer"), info.issuer);
    assert.deepEqual(conformanceReportProblems(report), []);
  });

  test("a corpus other than the referee's: graded, PARTIAL, and said so", async () => {
    const fewer = smallCorpus(SMALL_BUNDLES.slice(0, 2), SMALL_RECEIPTS, 10);
    const run = await receiptd([
      "conformance",
      "run",
      "--corpus",
      fewer,
      "--referee",
      origin,
      "--key",
      key,
    ]);
    assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^ {2}bundles {16}2\/3$/m);
    assert.match(run.stdout, /10b_anchor_missing\.json: missing/);
    assert.match(run.stdout, /^warning {3}the referee graded against another corpus/m);
    assert.match(run.stdout, /^report {4}verified: /m);
    assert.match(run.stdout, /\nverdict {3}PARTIAL\n$/);
  });

  test("without a key the referee's refusal is reported, exit 2", async () => {
    const run = await receiptd(["conformance", "run", "--corpus", small, "--referee", origin]);
    assert.equal(run.status, 2);
    assert.equal(run.stdout, "");
    assert.match(
      run.stderr,
      /^error: http:\/\/127\.0\.0\.1:\d+\/conformance refused the submission: HTTP 401 missing_key: .+ \(pass an API key with --key\)\n$/,
    );
  });

  test("an unreachable referee stops the run before any verifier is called", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    const run = await receiptd([
      "conformance",
      "run",
      "--corpus",
      small,
      "--referee",
      `http://127.0.0.1:${port}`,
    ]);
    assert.equal(run.status, 2);
    assert.equal(run.stdout, "");
    assert.match(
      run.stderr,
      new RegExp(`^error: cannot reach http://127\\.0\\.0\\.1:${port}/info: `),
    );
  });
});

describe("receiptd conformance run with other verifiers (small corpus, graded here)", () => {
  test("a verifier that calls everything TRUSTED is PARTIAL, mismatches listed, exit 1", async () => {
    const liar = fakeVerifier(
      "liar",
      'process.stdout.write(JSON.stringify({ verdict: "TRUSTED", errors: [] }));',
      "process.stdout.write(JSON.stringify({ valid: true, errors: [] }));",
    );
    const run = await receiptd(["conformance", "run", "--corpus", small, "--cli", liar]);
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stdout, /^ {2}bundles {16}1\/3$/m);
    assert.match(
      run.stdout,
      /^ {4}03_tampered_body\.json: verdict_mismatch \(expected \{"verdict":"UNTRUSTED","code":"bad_signature"\}, got \{"verdict":"TRUSTED","codes":\[\]\}\)$/m,
    );
    assert.match(run.stdout, /^ {2}verification_receipts {2}1\/3$/m);
    assert.match(run.stdout, /^report {4}verified: /m);
    assert.match(run.stdout, /\nverdict {3}PARTIAL\n$/);
  });

  test("a verifier that never answers is killed at --timeout: NONCONFORMANT, exit 1", async () => {
    const hang = "setInterval(() => {}, 1000);";
    const run = await receiptd([
      "conformance",
      "run",
      "--corpus",
      small,
      "--cli",
      fakeVerifier("hang", hang, hang),
      "--timeout",
      "0.5",
      "--concurrency",
      "4",
    ]);
    assert.equal(run.status, 1, run.stderr);
    assert.match(
      run.stdout,
      /^calls {5}16 in [\d.]+ s, 4 at a time, 0\.5 s limit each; 16 without a usable answer$/m,
    );
    assert.match(run.stdout, /^ {4}bundles 01_happy_minimal\.json: timed out after 0\.5 s$/m);
    assert.match(run.stdout, /\nverdict {3}NONCONFORMANT\n$/);
  });

  test("an executable that is not a node script runs as it is", async () => {
    const dir = join(scratch, "wrapped");
    mkdirSync(dir);
    const wrapper = (script: string) =>
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)} "$@"\n`;
    const bundleCli = join(dir, "continuity-receipt-verify");
    writeFileSync(bundleCli, wrapper(VERIFY_CLI));
    writeFileSync(
      join(dir, "continuity-receipt-verify-receipt"),
      wrapper(join(root, "dist/src/cli/continuity-receipt-verify-receipt.js")),
    );
    chmodSync(bundleCli, 0o755);
    chmodSync(join(dir, "continuity-receipt-verify-receipt"), 0o755);
    const run = await receiptd([
      "conformance",
      "run",
      "--corpus",
      small,
      "--cli",
      bundleCli,
      "--name",
      "wrapped",
    ]);
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /\nverdict {3}CONFORMANT\n$/);
  });

  test("a CLI it cannot find a receipt CLI beside needs --receipt-cli", async () => {
    const dir = join(scratch, "plain");
    mkdirSync(dir);
    const verify = join(dir, "verify.mjs");
    writeFileSync(verify, `await import(${JSON.stringify(VERIFY_CLI)});`);
    const refused = await receiptd(["conformance", "run", "--corpus", small, "--cli", verify]);
    assert.equal(refused.status, 2);
    assert.match(
      refused.stderr,
      /^error: --receipt-cli is needed: verify\.mjs has no continuity-receipt-verify in its name/,
    );
  });
});

describe("receiptd conformance run: command line", () => {
  test("--help explains the options and exits 0", async () => {
    const run = await receiptd(["conformance", "--help"]);
    assert.equal(run.status, 0);
    assert.match(run.stdout, /^usage: receiptd conformance run /);
    assert.match(run.stdout, /--referee URL/);
  });

  const refused: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [["run"], {}, /^error: no corpus: pass --corpus DIR or set CORPUS_DIR\n/],
    [["check"], { CORPUS_DIR }, /^error: the only command is run\n/],
    [["run", "--key", "svc_x"], { CORPUS_DIR }, /^error: --key is for a --referee\n/],
    [
      ["run", "--timeout", "0"],
      { CORPUS_DIR },
      /^error: --timeout must be a number > 0, got '0'\n/,
    ],
    [
      ["run", "--concurrency", "1.5"],
      { CORPUS_DIR },
      /^error: --concurrency must be a whole number > 0/,
    ],
    [["run", "--referee", "ftp://x"], { CORPUS_DIR }, /^error: --referee must be an http\(s\) URL/],
    [
      ["run", "--quik"],
      { CORPUS_DIR },
      /^error: unknown option '--quik'\nusage: receiptd conformance run/,
    ],
    [
      ["run", "--cli", "/nonexistent/verify"],
      { CORPUS_DIR },
      /^error: --cli \/nonexistent\/verify cannot be run: ENOENT/,
    ],
    [
      ["run"],
      { CORPUS_DIR: join(scratch, "empty") },
      /^error: .*empty: no corpus manifest is there\n$/,
    ],
  ];
  for (const [args, env, message] of refused) {
    test(`${args.join(" ")}: exit 2 with one line`, async () => {
      const run = await receiptd(["conformance", ...args], env);
      assert.equal(run.status, 2, run.stderr);
      assert.equal(run.stdout, "");
      assert.match(run.stderr, message);
    });
  }
});
