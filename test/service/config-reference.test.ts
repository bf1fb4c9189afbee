/**
 * One configuration reference (issue 14): every environment variable the code under `src/` and
 * `queues/` reads is in the table of src/service/config-reference.ts, nothing in the table is
 * dead, the committed docs/configuration.md and .env.example are exactly what the table
 * renders, and `serve --help` / `worker --help` name every variable their process reads.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main as serveMain } from "../../src/cli/serve.js";
import { main as workerMain } from "../../src/cli/worker.js";
import {
  CONFIG_VARIABLES,
  configurationMarkdown,
  envExample,
} from "../../src/service/config-reference.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * The ways the code reads a variable: `env.NAME`, `env["NAME"]`, a helper called with
 * `(env, "NAME"` (or `process.env`) and a local reader called with `("NAME_WITH_UNDERSCORE"` (`cap("KEY_DAILY_CAP"`).
 */
const READS = [
  /\benv\.([A-Z][A-Z0-9_]*)\b/g,
  /\benv\[\s*"([A-Z][A-Z0-9_]*)"\s*\]/g,
  /\(\s*(?:process\.)?env\s*,\s*"([A-Z][A-Z0-9_]*)"/g,
  /\b[a-z][A-Za-z]*\(\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g,
];

function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of [...sourceFiles("src"), ...sourceFiles("queues")]) {
    const text = readFileSync(file, "utf8");
    for (const pattern of READS) {
      for (const match of text.matchAll(pattern)) {
        const name = match[1];
        if (name !== undefined && !found.has(name)) found.set(name, file.slice(ROOT.length));
      }
    }
  }
  return found;
}

function captured(): {
  io: { stdout(text: string): void; stderr(text: string): void };
  out: string[];
} {
  const out: string[] = [];
  return { out, io: { stdout: (text) => out.push(text), stderr: (text) => out.push(text) } };
}

describe("the configuration reference", () => {
  const listed = new Set(CONFIG_VARIABLES.map((variable) => variable.name));

  test("lists every variable the code reads", () => {
    const read = variablesRead();
    // The scan itself works: it finds reads of each kind.
    for (const name of [
      "DATA_DIR",
      "MAX_BATCH",
      "KEY_DAILY_CAP",
      "WORKER_CONCURRENCY",
      "AUDIT_DIR",
    ]) {
      assert.ok(read.has(name), `the scan misses ${name}`);
    }
    const missing = [...read].filter(([name]) => !listed.has(name));
    assert.deepEqual(
      missing,
      [],
      `read but not in src/service/config-reference.ts (add a row, then npm run docs:config): ${missing
        .map(([name, file]) => `${name} (${file})`)
        .join(", ")}`,
    );
    const dead = [...listed].filter((name) => !read.has(name));
    assert.deepEqual(dead, [], "listed but read nowhere");
  });

  test("each variable is listed once, with a meaning and a program", () => {
    assert.equal(listed.size, CONFIG_VARIABLES.length);
    for (const variable of CONFIG_VARIABLES) {
      assert.ok(variable.meaning.length > 10, variable.name);
      assert.ok(variable.processes.length > 0, variable.name);
    }
  });

  test("docs/configuration.md and .env.example are generated from it (npm run docs:config)", () => {
    assert.equal(
      readFileSync(join(ROOT, "docs/configuration.md"), "utf8"),
      configurationMarkdown(),
    );
    assert.equal(readFileSync(join(ROOT, ".env.example"), "utf8"), envExample());
  });

  test(".env.example sets nothing: every variable is there, commented out", () => {
    const lines = envExample().split("\n");
    assert.ok(lines.every((line) => line === "" || line.startsWith("#")));
    for (const name of listed)
      assert.ok(
        lines.some((line) => line.startsWith(`# ${name}=`)),
        name,
      );
  });

  test("serve --help and worker --help name every variable their process reads", async () => {
    for (const [program, run] of [
      ["serve", serveMain],
      ["worker", workerMain],
    ] as const) {
      const { io, out } = captured();
      assert.equal(await run(["--help"], io), 0);
      const help = out.join("");
      for (const variable of CONFIG_VARIABLES) {
        if (!variable.processes.includes(program)) continue;
        assert.match(
          help,
          new RegExp(`\\b${variable.name}\\b`),
          `${program} --help: ${variable.name}`,
        );
      }
    }
  });
});
