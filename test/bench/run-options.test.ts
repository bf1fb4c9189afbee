/**
 * `npm run bench` refuses a command line it cannot run with one line and the usage (exit 2),
 * before it measures or starts anything.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const RUN = fileURLToPath(new URL("../../bench/run.ts", import.meta.url));

function bench(...args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", RUN, ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });
}

describe("bench command line", () => {
  const refused: [string[], string][] = [
    [["--quik"], "unknown option '--quik'"],
    [["--seconds", "0"], "--seconds must be a number > 0, got '0'"],
    [["--seconds", "soon"], "--seconds must be a number > 0, got 'soon'"],
    [["--connections", "1.5"], "--connections must be a whole number ≥ 1, got '1.5'"],
    [["--target", "localhost:8080"], "--target must be an http(s) URL, got 'localhost:8080'"],
    [["--scenarios", "single,nope"], "unknown scenario(s): nope"],
    [["--out"], "Option '--out <value>' argument missing"],
    [
      ["--target", "http://127.0.0.1:1", "--target-pid", "1", "--target-pid", "2"],
      "--target-pid is given 2 times for 1 --target(s)",
    ],
  ];
  for (const [args, message] of refused) {
    test(`${args.join(" ")}: one line, the usage, exit 2`, () => {
      const result = bench(...args);
      assert.equal(result.status, 2, result.stderr);
      assert.equal(result.stdout, "");
      const [first, second] = result.stderr.split("\n");
      assert.equal(first, `error: ${message}`);
      assert.equal(second, "usage: npm run bench -- [options]");
      assert.doesNotMatch(result.stderr, /\n\s+at /, "no stack trace");
    });
  }

  test("--help prints the usage on stdout and exits 0", () => {
    const result = bench("--help");
    assert.equal(result.status, 0);
    assert.match(result.stdout, /^usage: npm run bench -- \[options\]/);
  });
});
