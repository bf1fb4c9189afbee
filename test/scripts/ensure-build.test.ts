/**
 * scripts/ensure-build.mjs, which `npm start` runs first: when is dist/ stale, and does the
 * script then build (and otherwise do nothing)?
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { staleReason } from "../../scripts/ensure-build.mjs";

const repository = fileURLToPath(new URL("../../", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "receiptd-ensure-build-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let projects = 0;

/** A project tree under scratch; `files` maps relative paths to their mtime in seconds. */
function project(files: Record<string, number>): string {
  const root = join(scratch, `p${projects++}`);
  for (const [path, seconds] of Object.entries(files)) {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, path.endsWith(".json") ? "{}" : "export {};\n");
    utimesSync(file, seconds, seconds);
  }
  return root;
}

const SOURCES = {
  "tsconfig.json": 1_000,
  "src/cli/main.ts": 1_000,
  "src/types.d.ts": 1_000,
  "queues/jobs.ts": 1_000,
  "queues/task.ts": 1_000,
};
const OUTPUTS = {
  "dist/src/cli/main.js": 2_000,
  "dist/queues/jobs.js": 2_000,
  "dist/queues/task.js": 2_000,
};

describe("staleReason", () => {
  test("every runtime source built after it was last changed: nothing to do", () => {
    assert.equal(staleReason(project({ ...SOURCES, ...OUTPUTS })), null);
  });

  test("a fresh clone has no dist/", () => {
    assert.match(String(staleReason(project(SOURCES))), /^dist\/.+\.js is missing$/);
  });

  test("a runtime folder without its output is stale (the packaging bug's shape)", () => {
    const { "dist/queues/jobs.js": _, ...outputs } = OUTPUTS;
    assert.equal(
      staleReason(project({ ...SOURCES, ...outputs })),
      "dist/queues/jobs.js is missing",
    );
  });

  test("a source changed after the build is named", () => {
    const root = project({ ...SOURCES, ...OUTPUTS, "queues/task.ts": 3_000 });
    assert.equal(staleReason(root), "queues/task.ts is newer than dist/queues/task.js");
  });

  test("a changed tsconfig.json makes every output stale", () => {
    const root = project({ ...SOURCES, ...OUTPUTS, "tsconfig.json": 3_000 });
    assert.match(String(staleReason(root)), /^tsconfig\.json is newer than dist\//);
  });

  test("the page (src/web) is built by esbuild into dist/web, not by tsc", () => {
    const web = { "src/web/main.ts": 1_000, "src/web/styles.css": 1_000 };
    assert.equal(
      staleReason(project({ ...SOURCES, ...OUTPUTS, ...web })),
      "dist/web/build.json is missing",
    );
    const built = { ...SOURCES, ...OUTPUTS, ...web, "dist/web/build.json": 2_000 };
    assert.equal(staleReason(project(built)), null);
    assert.equal(
      staleReason(project({ ...built, "src/web/styles.css": 3_000 })),
      "src/web/styles.css is newer than dist/web",
    );
    // The page bundles the verifier: a verifier change makes it stale too.
    assert.equal(
      staleReason(
        project({ ...built, "src/verifier/x.ts": 3_000, "dist/src/verifier/x.js": 4_000 }),
      ),
      "src/verifier/x.ts is newer than dist/web",
    );
  });

  test("declaration files, tests and benches are not needed to serve", () => {
    const root = project({ ...SOURCES, ...OUTPUTS, "test/x.test.ts": 9_000, "bench/b.ts": 9_000 });
    assert.equal(staleReason(root), null);
  });
});

describe("scripts/ensure-build.mjs", () => {
  /** A tiny project with its own copy of the script, and the repository's TypeScript. */
  function tinyProject(withTypeScript: boolean): string {
    const root = project({ "src/main.ts": 1_000 });
    writeFileSync(join(root, "package.json"), '{"type":"module"}');
    writeFileSync(
      join(root, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "NodeNext", outDir: "dist", rootDir: ".", types: [] },
        include: ["src/**/*.ts"],
      }),
    );
    mkdirSync(join(root, "scripts"));
    copyFileSync(
      join(repository, "scripts/ensure-build.mjs"),
      join(root, "scripts/ensure-build.mjs"),
    );
    if (withTypeScript) symlinkSync(join(repository, "node_modules"), join(root, "node_modules"));
    return root;
  }

  const run = (root: string) =>
    spawnSync(process.execPath, [join(root, "scripts/ensure-build.mjs")], { encoding: "utf8" });

  test("builds a stale tree once, then does nothing", { timeout: 120_000 }, () => {
    const root = tinyProject(true);
    const first = run(root);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, /^ensure-build: dist\/src\/main\.js is missing; building/);
    assert.ok(existsSync(join(root, "dist/src/main.js")));
    const second = run(root);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stderr, "");
  });

  test("without TypeScript it says what to run and fails", () => {
    const result = run(tinyProject(false));
    assert.equal(result.status, 1);
    assert.match(result.stderr, /TypeScript is not installed; run `npm ci`/);
  });
});
