#!/usr/bin/env node
// `npm start` runs dist/, which a fresh clone does not have and a pulled branch may have left
// behind: this builds first when dist/ is missing or older than what it is built from.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The folders `receiptd` runs from once built (bench/ and test/ are not needed to serve). */
export const RUNTIME_SOURCE_DIRS = ["src", "queues"];
/** The page's sources: bundled by esbuild into dist/web (scripts/build-web.mjs), not by tsc. */
export const WEB_SOURCE_DIR = "src/web";
/** What the page bundle is made of besides its own folder (the evaluation-key tab's solver too). */
const WEB_INPUTS = ["src/verifier", "src/portable/proof-of-work.ts", "scripts/build-web.mjs"];

function mtimeOf(path) {
  return statSync(path, { throwIfNoEntry: false })?.mtimeMs;
}

function* files(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (error.code === "ENOENT" || error.code === "ENOTDIR") {
      if (existsSync(dir)) yield dir;
      return;
    }
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

function* typeScriptSources(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (error.code === "ENOENT") return;
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && path.endsWith(WEB_SOURCE_DIR)) continue;
    if (entry.isDirectory()) yield* typeScriptSources(path);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) yield path;
  }
}

/**
 * Why dist/ under `root` cannot be run as it is, or null when every runtime source has its
 * output and no output is older than its source (or than tsconfig.json). Only mtimes are
 * read, so this costs a few hundred stat calls.
 */
export function staleReason(root) {
  const tsconfig = mtimeOf(join(root, "tsconfig.json")) ?? 0;
  for (const dir of RUNTIME_SOURCE_DIRS) {
    for (const source of typeScriptSources(join(root, dir))) {
      const name = relative(root, source);
      const output = join("dist", name.replace(/\.ts$/, ".js"));
      const built = mtimeOf(join(root, output));
      if (built === undefined) return `${output} is missing`;
      if (built < mtimeOf(source)) return `${name} is newer than ${output}`;
      if (built < tsconfig) return `tsconfig.json is newer than ${output}`;
    }
  }
  return webStaleReason(root);
}

/** Why dist/web (the page) is not current, or null; a tree without src/web has no page. */
export function webStaleReason(root) {
  if (!existsSync(join(root, WEB_SOURCE_DIR))) return null;
  const built = mtimeOf(join(root, "dist/web/build.json"));
  if (built === undefined) return "dist/web/build.json is missing";
  for (const input of [WEB_SOURCE_DIR, ...WEB_INPUTS]) {
    for (const file of files(join(root, input))) {
      if (built < mtimeOf(file)) return `${relative(root, file)} is newer than dist/web`;
    }
  }
  return null;
}

/** Builds `root` with its own TypeScript, then its page when it has one; returns the exit code. */
export function build(root) {
  let tsc;
  try {
    tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
  } catch {
    process.stderr.write(
      "ensure-build: TypeScript is not installed; run `npm ci` (with dev dependencies) first\n",
    );
    return 1;
  }
  const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json")], {
    cwd: root,
    stdio: "inherit",
  });
  if (result.status !== 0 || !existsSync(join(root, WEB_SOURCE_DIR))) return result.status ?? 1;
  const web = spawnSync(process.execPath, [join(root, "scripts/build-web.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  return web.status ?? 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const reason = staleReason(root);
  if (reason !== null) {
    process.stderr.write(`ensure-build: ${reason}; building (npm run build) …\n`);
    process.exitCode = build(root);
  }
}
