#!/usr/bin/env node
// `npm run build`: empties dist/ (so a module moved or deleted in src/ can never be packed
// from an earlier build), compiles, then marks the package's bins executable. tsc writes new
// files 0644, and npm sets the bit only on bins that existed when it installed, so without
// this a rebuild leaves `npx receiptd` refused with "Permission denied". Then the
// verification page: src/web type-checked against the DOM (its own tsconfig), then bundled
// by esbuild into dist/web (scripts/build-web.mjs).
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { buildWeb } from "./build-web.mjs";

rmSync("dist", { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.json"], { stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);
const { bin } = JSON.parse(readFileSync("package.json", "utf8"));
for (const path of Object.values(bin)) chmodSync(path, 0o755);

const web = spawnSync(process.execPath, [tsc, "-p", "src/web/tsconfig.json"], { stdio: "inherit" });
if (web.status !== 0) process.exit(web.status ?? 1);
const { sizes } = await buildWeb(process.cwd());
for (const [name, size] of Object.entries(sizes)) {
  console.log(`dist/web/${name}: ${size.bytes} bytes (${size.gzip} gzip, ${size.brotli} brotli)`);
}
