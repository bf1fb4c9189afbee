/**
 * `npm run docs:config`: writes docs/configuration.md and .env.example from the table in
 * src/service/config-reference.ts. `--check` writes nothing and exits 1 when either differs.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { configurationMarkdown, envExample } from "../src/service/config-reference.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FILES: [string, string][] = [
  ["docs/configuration.md", configurationMarkdown()],
  [".env.example", envExample()],
];

const check = process.argv.includes("--check");
let stale = 0;
for (const [path, text] of FILES) {
  const target = ROOT + path;
  let current: string | null = null;
  try {
    current = readFileSync(target, "utf8");
  } catch {
    current = null;
  }
  if (current === text) continue;
  if (check) {
    process.stderr.write(`${path} is out of date: run npm run docs:config\n`);
    stale += 1;
  } else {
    writeFileSync(target, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
process.exitCode = stale === 0 ? 0 : 1;
