/**
 * The published package as a user gets it: `npm pack` from a clean tree (the repository's
 * files, no dist/, so `prepack` must build), `npm install` of the tarball into an empty
 * folder, then the installed `receiptd` serves and verifies a corpus bundle with a key
 * made by the installed `receiptd keys create`. Dependencies come from the npm cache when it
 * has them (--prefer-offline) and from the registry otherwise. Every path of the package that
 * README.md and docs/operations.md name is in the installed package (issue 37: they named
 * docs/, examples/, .env.example and a script that only a clone had), and the systemd units
 * the installed CLI writes name its files.
 */
import assert from "node:assert/strict";
import { type ChildProcessByStdio, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { corpusBytes, corpusPath } from "../support/corpus.js";

const run = promisify(execFile);
const repository = fileURLToPath(new URL("../../", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "receiptd-package-"));
const tree = join(scratch, "tree");
const app = join(scratch, "app");
const dataDir = join(scratch, "data");
const bin = (name: string) => join(app, "node_modules/.bin", name);
/** The installed package: what `npm install` unpacked. */
const installed = join(app, "node_modules/receiptd");

/** The user's environment, minus what would move the installed service out of embedded mode. */
const userEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, CPU_THREADS: "1" };
for (const name of ["REDIS_URL", "DATABASE_URL", "CORPUS_DIR", "HOST", "PORT", "X402_PAY_TO"]) {
  delete userEnv[name];
}

const INSTALL_TIMEOUT_MS = 600_000;
const COMMAND_TIMEOUT_MS = 60_000;

const PACK_TIMEOUT_MS = 300_000;

let packed: { filename: string; files: { path: string }[] };

/**
 * The repository as a fresh clone has it: the files git tracks or would add (the worktree's
 * versions), without dist/; node_modules is linked rather than installed again. Packing here
 * also keeps `prepack`'s build away from the dist/ that other tests are running from.
 */
async function cleanTree(): Promise<void> {
  const { stdout } = await run(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    { cwd: repository, maxBuffer: 16 << 20 },
  );
  // --cached also lists files deleted in the worktree but not yet in a commit.
  const files = stdout
    .split("\0")
    .filter((path) => path !== "" && existsSync(join(repository, path)));
  assert.ok(!files.some((path) => path.startsWith("dist/")), "dist/ is not part of a clone");
  mkdirSync(tree);
  const list = join(scratch, "files");
  writeFileSync(list, files.join("\0"));
  await run("tar", ["--null", "-T", list, "-cf", join(scratch, "tree.tar")], { cwd: repository });
  await run("tar", ["-xf", join(scratch, "tree.tar")], { cwd: tree });
  symlinkSync(join(repository, "node_modules"), join(tree, "node_modules"));
}

before(
  async () => {
    await cleanTree();
    // prepack's build writes to stdout as well, so the tarball itself is listed, not --json.
    await run("npm", ["pack", "--pack-destination", scratch, "--loglevel=error"], {
      cwd: tree,
      timeout: PACK_TIMEOUT_MS,
      maxBuffer: 16 << 20,
    });
    const filename = readdirSync(scratch).find((name) => name.endsWith(".tgz"));
    assert.ok(filename !== undefined, "npm pack wrote a tarball");
    const listing = await run("tar", ["-tzf", join(scratch, filename)], { maxBuffer: 16 << 20 });
    const files = listing.stdout
      .split("\n")
      .filter((line) => line !== "" && !line.endsWith("/"))
      .map((line) => ({ path: line.replace(/^package\//, "") }));
    packed = { filename, files };
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), '{"name":"receiptd-install-probe","private":true}\n');
    await run(
      "npm",
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        join(scratch, packed.filename),
      ],
      { cwd: app, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 << 20 },
    );
  },
  { timeout: PACK_TIMEOUT_MS + INSTALL_TIMEOUT_MS },
);
after(() => rmSync(scratch, { recursive: true, force: true }));

describe("the npm package", () => {
  test("ships every runtime folder of dist/, the licence, and no tests, benches or maps", () => {
    const paths = packed.files.map((file) => file.path);
    const runtime = readdirSync(join(tree, "dist")).filter(
      (name) => name !== "test" && name !== "bench",
    );
    assert.deepEqual(runtime.sort(), ["queues", "src", "web"]);
    for (const folder of runtime) {
      assert.ok(
        paths.some((path) => path.startsWith(`dist/${folder}/`)),
        `dist/${folder} is shipped`,
      );
    }
    const page = JSON.parse(readFileSync(join(tree, "dist/web/build.json"), "utf8")) as {
      assets: string[];
    };
    for (const required of [
      "LICENSE",
      "README.md",
      "package.json",
      // What the README and the runbook send the reader to (see the test on their paths).
      "docs/operations.md",
      "examples/pay-with-x402.mjs",
      ".env.example",
      "Procfile",
      "dist/queues/settlements.js",
      "dist/web/index.html",
      "dist/web/build.json",
      ...page.assets.map((asset) => `dist/web/assets/${asset}`),
    ]) {
      assert.ok(paths.includes(required), required);
    }
    // The browser's platform module: the server never loads it (the page bundles its own).
    // noble.js ships: the server decides Ed25519 edge points with it under OpenSSL > 3.0.
    assert.deepEqual(
      paths.filter((path) => /verifier\/crypto\/platform\.browser\./.test(path)),
      [],
    );
    assert.ok(paths.includes("dist/src/verifier/crypto/noble.js"));
    assert.deepEqual(
      paths.filter((path) => /^dist\/(test|bench)\//.test(path) || path.endsWith(".map")),
      [],
    );
  });

  test("the licence is Apache-2.0, as package.json says", () => {
    const manifest = JSON.parse(readFileSync(join(repository, "package.json"), "utf8"));
    assert.equal(manifest.license, "Apache-2.0");
    const licence = readFileSync(join(repository, "LICENSE"), "utf8");
    assert.match(licence, /^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    assert.match(licence, /END OF TERMS AND CONDITIONS/);
  });

  test("prepack built it: the bins and the library entry point are in the tarball", () => {
    const paths = new Set(packed.files.map((file) => file.path));
    const manifest = JSON.parse(readFileSync(join(repository, "package.json"), "utf8")) as {
      bin: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    const exported = Object.values(manifest.exports).flatMap((target) =>
      typeof target === "string" ? [target] : Object.values(target),
    );
    for (const path of [...Object.values(manifest.bin), ...exported]) {
      assert.ok(paths.has(path.replace(/^\.\//, "")), path);
    }
  });

  test("every path of the package that the README and the runbook name is installed", (t) => {
    const named = namedPaths(["README.md", "docs/operations.md"]);
    const shipped = named.filter((path) => path.shipped);
    const development = named.filter((path) => !path.shipped);
    // The ones the issue found missing are among those checked.
    for (const path of ["docs/operations.md", "examples/pay-with-x402.mjs", ".env.example"]) {
      assert.ok(
        shipped.some((found) => found.path === path),
        `${path} is named and checked`,
      );
    }
    const missing = shipped.filter((found) => !existsSync(join(installed, found.path)));
    assert.deepEqual(
      missing.map((found) => `${found.path} (${found.files.join(", ")})`),
      [],
      "named by the README or the runbook, missing from the installed package",
    );
    // Sources, tests and CI scripts are the repository's, as both documents say.
    for (const document of ["README.md", "docs/operations.md"]) {
      assert.match(
        readFileSync(join(repository, document), "utf8").replace(/\s+/g, " "),
        /paths under `src\/`, `test\/`, `scripts\/` and `\.ci\/` are the repository's/i,
        document,
      );
    }
    assert.deepEqual(
      development.filter((found) => !/^(src|test|scripts|\.ci)\//.test(found.path)),
      [],
      "named, neither shipped nor in a folder the documents call the repository's",
    );
    const absent = development.filter((found) => !existsSync(join(repository, found.path)));
    assert.deepEqual(
      absent.map((found) => found.path),
      [],
      "named as repository paths, missing from the repository",
    );
    t.diagnostic(`in the installed package (${shipped.length}): ${list(shipped)}`);
    t.diagnostic(`in the repository only (${development.length}): ${list(development)}`);
  });

  test("the installed CLI writes systemd units that name the installed package's files", async () => {
    const { stdout } = await run(bin("receiptd"), ["systemd-units"], {
      cwd: app,
      env: userEnv,
      timeout: COMMAND_TIMEOUT_MS,
    });
    const units = stdout.split(/^# (?=receiptd-\S+\.service$)/m).filter((unit) => unit !== "");
    assert.equal(units.length, 2);
    for (const unit of units) {
      const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(unit)?.[1] ?? "";
      assert.equal(field("WorkingDirectory"), realpathSync(installed));
      const documentation = field("Documentation").replace(/^file:\/\//, "");
      assert.equal(relative(realpathSync(installed), documentation), "docs/operations.md");
      assert.ok(existsSync(documentation), documentation);
      const script = /\s(dist\/\S+\.js)\s/.exec(field("ExecStart"))?.[1];
      assert.ok(script !== undefined && existsSync(join(installed, script)), field("ExecStart"));
    }
    assert.ok(existsSync(join(installed, ".env.example")), "the EnvironmentFile's template");
  });

  test("installs into an empty folder, serves, verifies and runs its tools", {
    timeout: 5 * COMMAND_TIMEOUT_MS,
  }, async () => {
    const options = { cwd: app, env: userEnv, timeout: COMMAND_TIMEOUT_MS };

    const help = await run(bin("receiptd"), ["--help"], options);
    assert.match(help.stdout, /^receiptd \S+ — /);
    assert.match(help.stdout, /usage: receiptd <command>/);
    // Loads the queue workers' whole module graph (queues/, BullMQ) before printing.
    const workerHelp = await run(bin("receiptd"), ["worker", "--help"], options);
    assert.match(workerHelp.stdout, /^usage: receiptd worker/);
    const verifyHelp = await run(bin("continuity-receipt-verify"), ["--help"], options);
    assert.match(verifyHelp.stdout, /^usage: continuity-receipt-verify /);
    // Loads the referee's grading code from dist/src/service.
    const conformanceHelp = await run(bin("receiptd"), ["conformance", "--help"], options);
    assert.match(conformanceHelp.stdout, /^usage: receiptd conformance run /);

    const created = await run(bin("receiptd"), ["keys", "create", "--name", "probe", "--json"], {
      ...options,
    });
    const { key } = JSON.parse(created.stdout) as { key: string };

    const library = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'import { parseJson, verifyBundle } from "receiptd";' +
          'import { readFileSync } from "node:fs";' +
          "console.log(verifyBundle(parseJson(readFileSync(process.argv[1]))).verdict);",
        corpusPath("vectors/02_happy_full.json"),
      ],
      options,
    );
    assert.equal(library.stdout, "TRUSTED\n");

    const server = spawn(bin("receiptd"), ["serve", "--port", "0"], {
      cwd: app,
      env: userEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const origin = await listeningOrigin(server);
      const response = await fetch(`${origin}/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: corpusBytes("vectors/02_happy_full.json"),
      });
      assert.equal(response.status, 200);
      const { service, ...result } = (await response.json()) as Record<string, unknown>;
      assert.equal(service, "continuity-receipt-verify");
      assert.deepEqual(
        result,
        JSON.parse(corpusBytes("expected/vectors/02_happy_full.json").toString()),
      );
      // The verification page, from the installed dist/web, with no key.
      const page = await fetch(`${origin}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      const script = /<script type="module" src="([^"]+)"/.exec(await page.text())?.[1];
      assert.ok(script !== undefined, "the page names its script");
      const asset = await fetch(`${origin}${script}`);
      assert.equal(asset.status, 200);
      assert.equal(asset.headers.get("cache-control"), "public, max-age=31536000, immutable");
      await asset.arrayBuffer();
      // The typed client, as an installed package exports it.
      const client = await run(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          'import { createClient } from "receiptd/client";' +
            'import { readFileSync } from "node:fs";' +
            "const client = createClient({ baseUrl: process.argv[1], apiKey: process.argv[2] });" +
            "const result = await client.verify(readFileSync(process.argv[3]));" +
            "await client.close(); console.log(result.verdict);",
          origin,
          key,
          corpusPath("vectors/02_happy_full.json"),
        ],
        options,
      );
      assert.equal(client.stdout, "TRUSTED\n");
    } finally {
      server.kill("SIGTERM");
      if (server.exitCode === null) await once(server, "exit");
    }
    assert.equal(server.exitCode, 0);
  });
});

interface NamedPath {
  path: string;
  /** In a top-level folder or file of the package (else one of the repository's alone). */
  shipped: boolean;
  /** The documents that name it. */
  files: string[];
}

/**
 * The paths into the project that `documents` name, anywhere in their text (prose, code
 * spans, blocks, links): a run of path characters that starts with a top-level folder of the
 * repository or of the package and a `/` (`docs/cli.md`, `dist/`), or is one of their
 * top-level files (`.env.example`, `Procfile`). A run preceded by a path character is part of
 * another path (`../shared/docs/`, `file:///opt/receiptd/docs/…`); `DATA_DIR/…` and
 * `node_modules/receiptd` start with no entry of the project; neither is taken. A trailing `.`
 * ends the sentence and `#…` is an anchor.
 */
function namedPaths(documents: string[]): NamedPath[] {
  const entries = (root: string) =>
    readdirSync(root, { withFileTypes: true }).filter(
      (entry) => entry.name !== "node_modules" && entry.name !== "dist",
    );
  const packageEntries = new Set(readdirSync(installed).filter((name) => name !== "node_modules"));
  const folders = new Set([
    ...packageEntries,
    ...entries(tree)
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name),
  ]);
  const files = new Set(
    [...entries(tree), ...entries(installed)]
      .filter((entry) => entry.isFile())
      .map((entry) => entry.name),
  );
  const found = new Map<string, NamedPath>();
  for (const document of documents) {
    const text = readFileSync(join(repository, document), "utf8");
    for (const match of text.matchAll(/(?<![\w./:~…-])(?:\.\/)?([\w.-]+(?:\/[\w.-]*)*)/g)) {
      const path = match[1]!.replace(/\.+$/, "");
      const slash = path.indexOf("/");
      const named = slash === -1 ? files.has(path) : folders.has(path.slice(0, slash));
      if (!named) continue;
      const first = slash === -1 ? path : path.slice(0, slash);
      const entry = found.get(path) ?? { path, shipped: packageEntries.has(first), files: [] };
      if (!entry.files.includes(document)) entry.files.push(document);
      found.set(path, entry);
    }
  }
  return [...found.values()].sort((a, b) => a.path.localeCompare(b.path));
}

function list(paths: NamedPath[]): string {
  return paths.map((found) => found.path).join(", ");
}

/** The origin `receiptd serve` logs once it listens; rejects if it exits or takes too long. */
function listeningOrigin(server: ChildProcessByStdio<null, Readable, Readable>): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(
      () => reject(new Error(`receiptd serve did not listen:\n${output}`)),
      COMMAND_TIMEOUT_MS,
    );
    const read = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    server.stdout.on("data", read);
    server.stderr.on("data", read);
    server.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`receiptd serve exited with ${code}:\n${output}`));
    });
  });
}
