/** The plumbing every CLI shares: how a refused command line is worded. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseArgs } from "node:util";
import { usageErrorText } from "../../src/cli/entry.js";

function refusal(args: string[], allowPositionals: boolean): Error {
  try {
    parseArgs({ args, allowPositionals, options: { port: { type: "string" } } });
  } catch (error) {
    if (error instanceof Error) return error;
  }
  throw new Error(`parseArgs accepted ${JSON.stringify(args)}`);
}

describe("usageErrorText", () => {
  test("an unknown option is one plain line, with or without positionals allowed", () => {
    for (const allowPositionals of [true, false]) {
      assert.equal(
        usageErrorText(refusal(["--quik"], allowPositionals)),
        "unknown option '--quik'",
      );
      assert.equal(usageErrorText(refusal(["-x"], allowPositionals)), "unknown option '-x'");
    }
    // Node's own text for this case ends in an unbalanced quote.
    assert.match(refusal(["--quik"], true).message, /'-- "--quik"$/);
  });

  test("an option name holding a quote survives", () => {
    assert.equal(usageErrorText(refusal(["--it's"], true)), "unknown option '--it's'");
  });

  test("other refusals keep node's wording, on one line", () => {
    assert.equal(
      usageErrorText(refusal(["--port"], true)),
      "Option '--port <value>' argument missing",
    );
    assert.match(usageErrorText(refusal(["stray"], false)), /^Unexpected argument 'stray'/);
    assert.equal(usageErrorText(new Error("first\nsecond")), "first");
  });
});
