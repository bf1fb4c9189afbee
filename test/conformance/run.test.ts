/** One verifier call of `receiptd conformance run`: exit code, stdout, and calls gone wrong. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { callVerifier } from "../../src/conformance/run.js";
import { fromPlain } from "../../src/verifier/json/value.js";

const node = (script: string) => ({ command: process.execPath, args: ["-e", script] });

describe("callVerifier", () => {
  test("the exit code and the JSON printed; stderr is not read", async () => {
    const result = await callVerifier(
      node(
        'console.error("noise"); console.log(JSON.stringify({ verdict: "UNTRUSTED", errors: [] })); process.exitCode = 1;',
      ),
      [],
      30_000,
    );
    assert.deepEqual(result, {
      exitCode: 1,
      output: fromPlain({ verdict: "UNTRUSTED", errors: [] }),
    });
  });

  test("the vector's arguments follow the CLI's own", async () => {
    const result = await callVerifier(
      {
        command: process.execPath,
        args: ["-e", "console.log(JSON.stringify(process.argv.slice(1)))", "--"],
      },
      ["a.json", "--require-anchor"],
      30_000,
    );
    assert.deepEqual(result.output, fromPlain(["a.json", "--require-anchor"]));
  });

  test("no JSON, a hang and a missing program are problems with no answer", async () => {
    const text = await callVerifier(
      node('process.stdout.write("Traceback"); process.exitCode = 3;'),
      [],
      30_000,
    );
    assert.deepEqual(text, { exitCode: 3, output: undefined, problem: "printed no JSON (exit 3)" });
    const hang = await callVerifier(node("setInterval(() => {}, 1000);"), [], 200);
    assert.deepEqual(hang, { exitCode: null, output: undefined, problem: "timed out after 0.2 s" });
    const missing = await callVerifier({ command: "/nonexistent/verifier", args: [] }, [], 30_000);
    assert.equal(missing.exitCode, null);
    assert.match(
      String(missing.problem),
      /^could not be started: spawn \/nonexistent\/verifier ENOENT/,
    );
  });
});
