/**
 * One coded base for library errors (issue 27): every error class in src/ extends `CodedError`
 * with a code, every library code has a public code in `LIBRARY_ERROR_CODES` (the compiler
 * checks that with `satisfies Record<LibraryErrorCode, ErrorCode>`; this checks the table's
 * values at run time too), and `refusalFor` answers from the table.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ChallengeLedgerUnavailableError } from "../../src/access/evaluation/issuer.js";
import { SubmissionError } from "../../src/conformance/grade.js";
import { PAYMENT_ERROR_REASONS, PaymentError } from "../../src/payments/errors.js";
import { ConfigError } from "../../src/service/config.js";
import {
  ClientGoneError,
  CpuPoolOverloadedError,
  WorkLimitExceededError,
} from "../../src/service/cpu-pool.js";
import { ERROR_STATUS, isErrorCode } from "../../src/service/errors.js";
import {
  escapedRefusal,
  LIBRARY_ERROR_CODES,
  publicCodeOf,
  RETRY_LATER,
  refusalFor,
  STORE_UNAVAILABLE,
} from "../../src/service/library-errors.js";
import { DocumentStoreUnavailableError } from "../../src/storage/document-store.js";
import { AnchorProofError } from "../../src/verifier/anchor/ots.js";
import { ResultBudgetExceeded } from "../../src/verifier/bundle/budget.js";
import { CodedError } from "../../src/verifier/coded-error.js";
import { CanonicalizationError } from "../../src/verifier/json/canonical.js";
import { StrictJsonError } from "../../src/verifier/json/parse.js";
import { TimestampCrash } from "../../src/verifier/timestamps.js";

const SRC = new URL("../../src/", import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** `class X extends Y` where X is named like an error, with what it extends. */
function errorClasses(): { file: string; name: string; base: string }[] {
  const found: { file: string; name: string; base: string }[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/\bclass (\w+) extends ([\w.]+)/g)) {
      const [, name = "", base = ""] = match;
      if (/Error|Exceeded|Unusable|Crash|Refused|BadRequest/.test(name + base)) {
        found.push({ file: file.slice(SRC.length), name, base });
      }
    }
  }
  return found;
}

describe("library errors", () => {
  test("every error class in src/ extends the coded base", () => {
    const classes = errorClasses();
    // The scan must see the classes it vouches for (the review counted 46; the CLIs' usage
    // errors have since become one CliUsageError), not an empty or partial tree.
    const names = new Set(classes.map(({ name }) => name));
    for (const known of ["PaymentError", "NotarizationError", "CliUsageError", "StrictJsonError"]) {
      assert.ok(names.has(known), `the scan did not find ${known}`);
    }
    assert.ok(classes.length >= 40, `found only ${classes.length} error classes`);
    const uncoded = classes.filter(
      ({ name, base }) =>
        name !== "ServiceError" &&
        !/^(CodedError|codedErrorClass)\b/.test(base.split("<")[0] ?? ""),
    );
    assert.deepEqual(uncoded, []);
  });

  test("the codes of a sample of classes, one per kind of constructor", () => {
    assert.equal(new StrictJsonError("syntax", "Expecting value").code, "invalid_json");
    assert.equal(new CanonicalizationError("float", "x").code, "not_canonicalizable");
    assert.equal(new ResultBudgetExceeded(10).code, "result_too_large");
    assert.equal(new TimestampCrash("x").code, "timestamp_crash");
    assert.equal(new WorkLimitExceededError(5).code, "work_limit_exceeded");
    assert.equal(new ConfigError("PORT must be a number").code, "config_invalid");
    assert.equal(new PaymentError("signer_mismatch", "x").code, "signer_mismatch");
  });

  test("messages are unchanged: the code prefixes only errors that always had it", () => {
    assert.equal(new StrictJsonError("syntax", "Expecting value").message, "Expecting value");
    assert.equal(new ConfigError("PORT must be a number").message, "PORT must be a number");
    assert.equal(
      new TimestampCrash("x").message,
      "Invalid isoformat string: 'x'",
      "Python's words, as the verdicts quote them",
    );
    const cause = new Error("ENOSPC");
    const unavailable = new DocumentStoreUnavailableError("disk full", { cause });
    assert.equal(unavailable.message, "disk full");
    assert.equal(unavailable.cause, cause);
    assert.equal(
      new AnchorProofError("truncated", "proof ends early").message,
      "truncated: proof ends early",
    );
    assert.equal(new AnchorProofError("truncated", "proof ends early").detail, "proof ends early");
  });

  test("every library code maps to a public code", () => {
    for (const [code, publicCode] of Object.entries(LIBRARY_ERROR_CODES)) {
      assert.ok(isErrorCode(publicCode), `${code} → ${publicCode} is not in ERROR_STATUS`);
      assert.equal(publicCodeOf(code), publicCode);
    }
    assert.equal(publicCodeOf("usage"), null, "a CLI's private code is no library code");
    assert.equal(publicCodeOf("toString"), null);
  });

  test("the payment codes are listed once and have status 402", () => {
    for (const code of Object.keys(PAYMENT_ERROR_REASONS)) {
      assert.equal(ERROR_STATUS[code as keyof typeof ERROR_STATUS], 402, code);
      assert.equal(publicCodeOf(code), code);
    }
  });

  test("refusalFor answers from the table; faults and foreign errors get none", () => {
    const overloaded = refusalFor(new CpuPoolOverloadedError("queue full"));
    assert.deepEqual(overloaded?.body(), { error: "overloaded" });
    assert.deepEqual(refusalFor(new WorkLimitExceededError(250))?.body(), {
      error: "work_limit_exceeded",
      limit: 250,
    });
    assert.deepEqual(refusalFor(new ClientGoneError())?.body(), { error: "client_closed" });
    const submission = new SubmissionError("missing_section", "no bundle section");
    assert.deepEqual(refusalFor(submission, (error) => ({ detail: error.detail }))?.body(), {
      error: "missing_section",
      detail: "no bundle section",
    });
    assert.deepEqual(refusalFor(new AnchorProofError("truncated", "x"))?.status, 400);
    assert.equal(refusalFor(new ConfigError("bad")), null, "a fault is logged, not refused");
    assert.equal(refusalFor(new TimestampCrash("x")), null);
    assert.equal(refusalFor(new Error("plain")), null);
    assert.equal(refusalFor(new CodedError("usage", "x")), null);
    assert.equal(refusalFor("not an error"), null);
  });

  test("an escaped library error is refused only for a condition of the service", () => {
    assert.equal(
      escapedRefusal(new DocumentStoreUnavailableError("down"))?.code,
      "store_unavailable",
    );
    assert.equal(
      escapedRefusal(new ChallengeLedgerUnavailableError("down"))?.code,
      "challenge_ledger_unavailable",
    );
    assert.equal(escapedRefusal(new ClientGoneError())?.status, 499);
    // The same failure on the service's own data is a fault, not the client's bad request.
    assert.equal(escapedRefusal(new StrictJsonError("syntax", "Expecting value")), null);
    assert.equal(escapedRefusal(new PaymentError("signer_mismatch", "x")), null);
  });

  test("one condition, four codes: each store's code is a 503 retried after a second", () => {
    for (const code of Object.values(STORE_UNAVAILABLE)) {
      assert.equal(ERROR_STATUS[code], 503);
      assert.ok(RETRY_LATER.has(code), code);
    }
    assert.ok(RETRY_LATER.has("overloaded"));
    assert.ok(!RETRY_LATER.has("work_limit_exceeded"), "a retry would pass the deadline again");
  });
});
