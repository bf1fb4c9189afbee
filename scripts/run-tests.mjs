#!/usr/bin/env node
// Node 20's test runner takes no globs, so the suite's file list is gathered here.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function collect(dir) {
  const files = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...collect(path));
    else if (name.endsWith(".test.ts")) files.push(path);
  }
  return files;
}

// Redis and PostgreSQL: the running ones, or started here when they are down.
const services = spawnSync(process.execPath, ["scripts/ensure-services.mjs"], { stdio: "inherit" });
if (services.status !== 0) process.exit(services.status ?? 1);

const only = process.argv.slice(2);
const files = only.length > 0 ? only : collect("test");
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-reporter=spec", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
