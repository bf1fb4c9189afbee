/**
 * `receiptd --help` lists every option: each option a subcommand's own `--help` names, and
 * each option the README and docs/ use with a `receiptd …` command (issue 26: `--key-only`
 * and `keys list --all` were used by the README and missing from the help). The reference-
 * compatible CLIs are held to their own `--help` the same way.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = (name: string) => join(ROOT, "dist/src/cli", `${name}.js`);
/** Every command takes it, and the help says so once rather than on every line. */
const EVERYWHERE = new Set(["--help"]);

function help(cli: string, args: string[] = []): string {
  return execFileSync(process.execPath, [CLI(cli), ...args, "--help"], { encoding: "utf8" });
}

const options = (text: string) => new Set(text.match(/--[a-z][a-z-]*/g) ?? []);

const topLevel = help("receiptd");
/** Each subcommand's line under `arguments:` in `receiptd --help`. */
const usageLines = new Map<string, string>();
for (const match of topLevel.matchAll(/^ {2}receiptd ([a-z-]+)(?: (.*))?$/gm)) {
  usageLines.set(match[1]!, match[2] ?? "");
}

/** README.md and docs/*.md, with shell line continuations joined. */
function documentation(): { file: string; text: string }[] {
  const files = [
    "README.md",
    ...readdirSync(join(ROOT, "docs"))
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name}`),
  ];
  return files.map((file) => ({
    file,
    text: readFileSync(join(ROOT, file), "utf8").replace(/\\\n\s*/g, " "),
  }));
}

/**
 * `<program> [<subcommand>] …--options` as written in the docs, up to the end of the command;
 * a program named inside a path (`--cli path/to/continuity-receipt-verify`) is not a use.
 */
function documentedUses(program: RegExp): { file: string; command: string; options: string[] }[] {
  const uses = [];
  for (const { file, text } of documentation()) {
    for (const match of text.matchAll(program)) {
      const command = match[1] ?? "";
      const rest = match[2] ?? "";
      uses.push({ file, command, options: [...options(rest)] });
    }
  }
  return uses;
}

describe("receiptd --help", () => {
  test("has an arguments line for every subcommand", () => {
    const commands = [...topLevel.matchAll(/^ {2}([a-z-]+) {2,}\S/gm)].map((match) => match[1]);
    assert.ok(commands.length >= 10);
    for (const command of commands) assert.ok(usageLines.has(command!), command);
  });

  test("names every option of each subcommand's own --help", () => {
    for (const [command, line] of usageLines) {
      const listed = options(line);
      for (const option of options(help("receiptd", [command]))) {
        if (EVERYWHERE.has(option)) continue;
        assert.ok(listed.has(option), `receiptd ${command} ${option} is missing from --help`);
      }
    }
  });

  test("names every option the README and docs/ use with a receiptd command", () => {
    const names = [...usageLines.keys()].sort((a, b) => b.length - a.length).join("|");
    const uses = documentedUses(
      new RegExp(`(?<![/\\w-])receiptd (${names})\\b([^\`#|;)\\n]*)`, "g"),
    );
    assert.ok(
      uses.some((use) => use.options.includes("--key-only")),
      "the quick start's keys create --key-only is found",
    );
    for (const use of uses) {
      const listed = options(usageLines.get(use.command) ?? "");
      for (const option of use.options) {
        if (EVERYWHERE.has(option)) continue;
        assert.ok(
          listed.has(option),
          `${use.file} uses receiptd ${use.command} ${option}, which --help does not list`,
        );
      }
    }
  });

  test("states that every command takes --help", () => {
    assert.match(topLevel, /Every command takes --help/);
  });
});

describe("the reference-compatible CLIs' --help", () => {
  for (const cli of [
    "continuity-receipt-verify-receipt",
    "continuity-receipt-verify",
    "continuity-receipt-anchor",
  ]) {
    test(`${cli} names every option the README and docs/ use with it`, () => {
      const listed = options(help(cli));
      const uses = documentedUses(new RegExp(`(?<![/\\w-])(${cli})(?!-)\\b([^\`#|;)\\n]*)`, "g"));
      assert.ok(uses.length > 0, `${cli} is documented`);
      for (const use of uses) {
        for (const option of use.options) {
          if (EVERYWHERE.has(option)) continue;
          assert.ok(listed.has(option), `${use.file} uses ${cli} ${option}, not in its --help`);
        }
      }
    });
  }
});
