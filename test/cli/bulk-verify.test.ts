/**
 * `receiptd verify` in bulk (issue 35), as real processes: parity with the corpus's expected
 * results over all 77 bundle vectors, locally (worker threads) and against a real server;
 * a server that answers 503 with Retry-After for a while (a fault peer in front of it);
 * kill -9 mid-run then `--resume`; the progress bar under a pseudo-terminal and none of it on
 * a pipe; the single-file form unchanged.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../service/support/server-process.js";
import { temporaryDataDir } from "../service/support/service.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
  corpusPath,
} from "../support/corpus.js";

const run = promisify(execFile);
const REPOSITORY = fileURLToPath(new URL("../../", import.meta.url));
const RECEIPTD = join(REPOSITORY, "src/cli/receiptd.ts");

interface Line {
  source: string;
  verdict: string | null;
  error_codes: string[];
  error?: string;
}

interface Vector {
  path: string;
  verdict: string;
  codes: string[];
  requireAnchor: boolean;
}

/** Every bundle vector with its expected verdict and ordered codes (`corpus/expected`). */
function vectors(): Vector[] {
  const found: Vector[] = [];
  for (const manifestPath of BUNDLE_MANIFESTS) {
    for (const vector of corpusManifest<BundleManifest>(manifestPath).vectors) {
      const expected = JSON.parse(
        corpusBytes(`expected/vectors/${vector.file}`).toString("utf8"),
      ) as { verdict: string; errors: { code: string }[] };
      found.push({
        path: corpusPath(`vectors/${vector.file}`),
        verdict: expected.verdict,
        codes: expected.errors.map((error) => error.code),
        requireAnchor: vector.require_anchor,
      });
    }
  }
  return found;
}

function parseLines(text: string): Line[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Line);
}

async function verifyCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "verify", ...args],
      {
        cwd: REPOSITORY,
        env: { ...process.env, ...env },
        maxBuffer: 64 << 20,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/**
 * One bulk run over the 75 vectors verified as they are, one over the 2 the manifests verify
 * with --require-anchor; every line equal to `corpus/expected`, in input order.
 */
async function assertParity(extra: string[]): Promise<void> {
  const all = vectors();
  assert.equal(all.length, 77);
  for (const requireAnchor of [false, true]) {
    const group = all.filter((vector) => vector.requireAnchor === requireAnchor);
    const args = [...group.map((vector) => vector.path), ...extra];
    const result = await verifyCli(requireAnchor ? [...args, "--require-anchor"] : args);
    assert.equal(result.code, 1, result.stderr);
    const lines = parseLines(result.stdout);
    assert.deepEqual(
      lines.map((line) => line.source),
      group.map((vector) => vector.path),
    );
    for (const [at, vector] of group.entries()) {
      const line = lines[at] as Line;
      assert.deepEqual(
        { verdict: line.verdict, codes: line.error_codes },
        { verdict: vector.verdict, codes: vector.codes },
        vector.path,
      );
    }
  }
}

let scratch: string;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "receiptd-bulk-"));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("receiptd verify in bulk, locally", () => {
  test("parity with corpus/expected over the 77 bundle vectors", { timeout: 120_000 }, async () => {
    await assertParity(["--jobs", "2"]);
  });

  test("one bundle keeps the single-file output and exit codes", async () => {
    const good = await verifyCli([corpusPath("vectors/01_happy_minimal.json")]);
    assert.equal(good.code, 0);
    assert.equal(JSON.parse(good.stdout).verdict, "TRUSTED");
    assert.match(good.stdout, /^\{\n {2}"verdict": "TRUSTED",/);
    const bad = await verifyCli([corpusPath("vectors/03_tampered_body.json")]);
    assert.equal(bad.code, 1);
    const missing = await verifyCli([join(scratch, "absent.json")]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read bundle/);
  });

  test("exit 0 only when every bundle is TRUSTED; an unreadable input is 2", async () => {
    const trusted = corpusPath("vectors/01_happy_minimal.json");
    const both = await verifyCli([trusted, trusted]);
    assert.equal(both.code, 0, both.stderr);
    assert.equal(parseLines(both.stdout).length, 2);
    const unreadable = await verifyCli([trusted, join(scratch, "absent.json")]);
    assert.equal(unreadable.code, 2);
    const [, line] = parseLines(unreadable.stdout);
    assert.equal(line?.verdict, null);
    assert.match(String(line?.error), /^unreadable: /);
  });

  test("NDJSON on stdin, --summary and --full", async () => {
    const bundle = JSON.stringify(
      JSON.parse(corpusBytes("vectors/01_happy_minimal.json").toString()),
    );
    const child = spawn(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "verify", "-", "--summary", "--full"],
      { cwd: REPOSITORY },
    );
    child.stdin.end(`${bundle}\n\nnot json\n${bundle}`);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const [code] = await once(child, "exit");
    assert.equal(code, 1);
    const lines = parseLines(stdout) as (Line & { result: { verdict: string } })[];
    assert.deepEqual(
      lines.map((line) => [line.source, line.verdict, line.result.verdict]),
      [
        ["-:1", "TRUSTED", "TRUSTED"],
        ["-:3", "UNTRUSTED", "UNTRUSTED"],
        ["-:4", "TRUSTED", "TRUSTED"],
      ],
    );
    const summary = JSON.parse(stderr);
    assert.deepEqual(summary.verdicts, { TRUSTED: 2, UNTRUSTED: 1 });
    assert.deepEqual(summary.top_error_codes, { malformed: 1 });
    assert.equal(summary.total, 3);
  });

  test("a line larger than a chunk's buffer travels alone and keeps its place", async () => {
    const bundle = JSON.stringify(
      JSON.parse(corpusBytes("vectors/01_happy_minimal.json").toString()),
    );
    // Over the 1 MiB a chunk is copied into, under the 8 MiB limit: trailing blanks are JSON.
    const padded = `${bundle}${" ".repeat(1_500_000)}`;
    const path = join(scratch, "large-line.ndjson");
    await writeFile(path, [bundle, padded, bundle, padded, bundle].join("\n"));
    const result = await verifyCli(["--ndjson", path, "--jobs", "1"]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      parseLines(result.stdout).map((line) => [line.source, line.verdict]),
      [1, 2, 3, 4, 5].map((at) => [`${path}:${at}`, "TRUSTED"]),
    );
  });

  test("kill -9 mid-run, then --resume: exactly one line per input, in order", {
    timeout: 300_000,
  }, async () => {
    const good = JSON.stringify(
      JSON.parse(corpusBytes("vectors/01_happy_minimal.json").toString()),
    );
    const bad = JSON.stringify(JSON.parse(corpusBytes("vectors/03_tampered_body.json").toString()));
    const count = 20_000;
    const input = join(scratch, "many.ndjson");
    const lines = Array.from({ length: count }, (_, at) => (at % 7 === 3 ? bad : good));
    await writeFile(input, `${lines.join("\n")}\n`);
    const out = join(scratch, "many.out");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "verify", "--ndjson", input, "--out", out, "--jobs", "1"],
      { cwd: REPOSITORY, stdio: "ignore" },
    );
    const exited = once(child, "exit");
    // Killed once some lines are out, long before all 20,000 can be.
    for (;;) {
      const size = await stat(out).then(
        (found) => found.size,
        () => 0,
      );
      if (size > 20_000) break;
      if (child.exitCode !== null) assert.fail("the run ended before it could be killed");
      await sleep(20);
    }
    child.kill("SIGKILL");
    await exited;
    const partial = parseLines(await readFile(out, "utf8").then(cutTornTail));
    assert.ok(partial.length > 0 && partial.length < count, `${partial.length} lines before kill`);
    // A line torn by the kill (here made by hand) is dropped on resume, not kept or doubled.
    await appendFile(out, '{"source":"torn');
    const resumed = await verifyCli(["--ndjson", input, "--out", out, "--resume", "--summary"]);
    assert.equal(resumed.code, 1, resumed.stderr);
    const written = parseLines(await readFile(out, "utf8"));
    assert.equal(written.length, count);
    assert.deepEqual(
      written.map((line) => line.source),
      Array.from({ length: count }, (_, at) => `${input}:${at + 1}`),
    );
    for (const [at, line] of written.entries()) {
      assert.equal(line.verdict, at % 7 === 3 ? "UNTRUSTED" : "TRUSTED", line.source);
    }
    const summary = JSON.parse(resumed.stdout);
    assert.equal(summary.total, count);
    assert.equal(summary.resumed, partial.length);
    // Resuming a finished run verifies nothing more.
    const again = await verifyCli(["--ndjson", input, "--out", out, "--resume"]);
    assert.equal(again.code, 1);
    assert.equal(parseLines(await readFile(out, "utf8")).length, count);
  });

  test("--resume refuses an --out of other inputs", async () => {
    const out = join(scratch, "other.out");
    await writeFile(out, '{"source":"elsewhere.json","verdict":"TRUSTED","error_codes":[]}\n');
    const result = await verifyCli([
      corpusPath("vectors/01_happy_minimal.json"),
      "--out",
      out,
      "--resume",
    ]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /does not belong to these inputs/);
  });

  test("the progress bar is drawn on a terminal, and nothing of it on a pipe", {
    timeout: 60_000,
  }, async () => {
    const directory = corpusPath("vectors");
    const out = join(scratch, "tty.out");
    const command = [
      process.execPath,
      "--import",
      "tsx",
      RECEIPTD,
      "verify",
      directory,
      "--out",
      out,
    ]
      .map((word) => `'${word}'`)
      .join(" ");
    // util-linux `script` gives the CLI a pseudo-terminal and copies what it draws to stdout.
    const { stdout: screen } = await run("script", ["-qfec", command, "/dev/null"], {
      cwd: REPOSITORY,
      maxBuffer: 16 << 20,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    assert.match(screen, /\d+\/\d+ \| \d+\/s \| ETA/);
    assert.match(screen, /T \d+ U \d+ P \d+ I \d+/);

    const piped = await verifyCli([directory, "--out", out]);
    assert.equal(piped.code, 1);
    assert.equal(piped.stderr, "");
  });
});

/** The file's text without a last line that has no `\n`. */
function cutTornTail(text: string): string {
  return text.slice(0, text.lastIndexOf("\n") + 1);
}

/**
 * A peer in front of the server that answers `POST /verify` with 503 and `Retry-After: 1`
 * for its first `refusals` requests, then passes everything through.
 */
async function overloadedPeer(target: string, refusals: number) {
  const origin = new URL(target);
  let refused = 0;
  let passed = 0;
  const server = createServer((incoming, outgoing) => {
    if (incoming.method === "POST" && incoming.url?.startsWith("/verify") && refused < refusals) {
      refused += 1;
      incoming.resume();
      outgoing.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
      outgoing.end('{"error":"overloaded"}');
      return;
    }
    if (incoming.url?.startsWith("/verify")) passed += 1;
    const forward = httpRequest(
      {
        host: origin.hostname,
        port: origin.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    incoming.pipe(forward);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ refused, passed }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("receiptd verify in bulk, against a real server", () => {
  let server: ServerProcess;
  let dataDir: string;
  let key: string;
  before(async () => {
    dataDir = await temporaryDataDir();
    const created = await run(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "keys", "create", "--name", "bulk", "--key-only"],
      { cwd: REPOSITORY, env: { ...process.env, DATA_DIR: dataDir } },
    );
    key = created.stdout.trim();
    server = await startServerProcess({ DATA_DIR: dataDir });
  });
  after(async () => {
    await stopServerProcess(server);
    await rm(dataDir, { recursive: true, force: true });
  });

  test("parity with corpus/expected over the 77 bundle vectors", { timeout: 120_000 }, async () => {
    await assertParity(["--remote", server.base, "--key", key]);
  });

  test("503 with Retry-After for a while, then recovery: nothing lost or duplicated", {
    timeout: 120_000,
  }, async () => {
    const peer = await overloadedPeer(server.base, 6);
    try {
      const inputs = vectors()
        .filter((vector) => !vector.requireAnchor)
        .map((vector) => vector.path);
      // Three copies: several batches in flight, each refused and retried.
      const args = [...inputs, ...inputs, ...inputs];
      const result = await verifyCli([
        ...args,
        "--remote",
        peer.url,
        "--key",
        key,
        "--jobs",
        "3",
        "--full",
      ]);
      assert.equal(result.code, 1, result.stderr);
      const lines = parseLines(result.stdout);
      assert.deepEqual(
        lines.map((line) => line.source),
        args,
      );
      const expected = new Map(vectors().map((vector) => [vector.path, vector]));
      for (const line of lines) {
        const vector = expected.get(line.source) as Vector;
        assert.deepEqual([line.verdict, line.error_codes], [vector.verdict, vector.codes]);
      }
      assert.equal(peer.counts().refused, 6);
      assert.ok(peer.counts().passed >= 5, `${peer.counts().passed} batches passed`);
    } finally {
      await peer.close();
    }
  });

  test("a refusal the client cannot wait out stops the run with exit 2", async () => {
    const result = await verifyCli([
      corpusPath("vectors/01_happy_minimal.json"),
      corpusPath("vectors/02_happy_full.json"),
      "--remote",
      server.base,
      "--key",
      "svc_not_a_key",
    ]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /the service stopped the run: invalid_key/);
  });
});
