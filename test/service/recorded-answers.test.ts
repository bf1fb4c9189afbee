/**
 * Recorded answers (issue 13): every route of the service, asked a broad set of requests —
 * each success form, each error code reachable from outside, conditional requests, payments —
 * and what it answered, byte for byte (status, every response header but `Date`, the body),
 * kept in `recorded-answers.json` beside this file. The suite checks that the service still
 * answers exactly that; a restructure that changes no behaviour leaves it green.
 *
 * Re-record (after an intended change of behaviour, and review the diff of the JSON file):
 *
 *     RECORD_ANSWERS=1 node --import tsx --test test/service/recorded-answers.test.ts
 *
 * What cannot be fixed is normalised, narrowly and only after it is checked: see the list at
 * the top of recorded-answers/recorder.ts. Identities (service key, validator key, internal
 * token) are fixed files written into each DATA_DIR before the app is built, the clock is
 * fixed, the x402 payer's wallet and nonces are fixed, and the requests are sent in one fixed
 * order per service, so the recording depends neither on the machine nor on test order.
 * docs/testing.md says more.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { before, describe, test } from "node:test";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { isObject, type JsonObject, type JsonValue } from "../../src/verifier/json/value.js";
import { CORPUS_DIR } from "../support/corpus.js";
import {
  differences,
  formatRecording,
  PLACEHOLDERS,
  parseRecording,
  Recorder,
} from "./recorded-answers/recorder.js";
import { recordAll } from "./recorded-answers/scenarios.js";

const RECORDING = new URL("./recorded-answers.json", import.meta.url);
const RECORD = process.env.RECORD_ANSWERS === "1";
const COMMAND = "RECORD_ANSWERS=1 node --import tsx --test test/service/recorded-answers.test.ts";

/**
 * Error codes the recording must reach: every `error` the service answers with from outside,
 * as listed by grepping `error: "` and the refusal helpers in src/. Not here
 * (not reachable from outside without breaking a dependency): store_unavailable and the
 * *_store_unavailable codes, nonce_ledger_unavailable, challenge_ledger_unavailable,
 * internal_error, the facilitator's
 * facilitator_timeout/_error/_bad_response.
 */
const EXPECTED_ERRORS = [
  "ambiguous_bundle",
  "ambiguous_tenant",
  "anchor_not_found",
  "bad_bundle",
  "bad_bundle_bytes",
  "bad_chain_id",
  "bad_envelope",
  "bad_registry_address",
  "bad_registry_checksum",
  "bad_request",
  "bad_request_id",
  "bad_shape",
  "bad_submission",
  "bad_task_hash",
  "batch_too_large",
  "body_too_large",
  "bundle_not_canonicalizable",
  "challenge_already_used",
  "challenge_expired",
  "ciphertext_too_large",
  "corpus_not_deployed",
  "crystal_conflict",
  "crystal_id_mismatch",
  "crystal_not_found",
  "daily_cap_reached",
  "evaluation_keys_disabled",
  "evaluation_keys_exhausted",
  "evaluation_limit_reached",
  "facilitator_unreachable",
  "internal_token_required",
  "insufficient_proof_of_work",
  "invalid_challenge",
  "invalid_ciphertext",
  "invalid_created_at",
  "invalid_crystal_id",
  "invalid_digest",
  "invalid_header_encoding",
  "invalid_height",
  "invalid_json",
  "invalid_key",
  "invalid_metadata_public",
  "invalid_exact_evm_payload_authorization_value",
  "invalid_nonce",
  "invalid_parent_crystal_id",
  "invalid_payment_encoding",
  "invalid_payment_json",
  "invalid_proof_encoding",
  "invalid_size_bytes",
  "invalid_tenant_hash",
  "invalid_transaction_hash",
  "invalid_x402_version",
  "key_expired",
  "loopback_only",
  "metadata_too_large",
  "method_not_allowed",
  "missing_bundle",
  "missing_key",
  "missing_member",
  "missing_request_id",
  "missing_section",
  "missing_task_hash",
  "missing_tenant",
  "multiple_payment_headers",
  "no_document",
  "nonce_already_used",
  "not_acceptable",
  "not_found",
  "origin_not_allowed",
  "overloaded",
  "parent_not_found",
  "pass_expired",
  "pass_malformed",
  "pass_scope_mismatch",
  "pass_signature_invalid",
  "payment_required",
  "payments_unavailable",
  "proof_rejected",
  "receipt_not_found",
  "signature_high_s",
  "size_mismatch",
  "stored_document_invalid",
  "task_hash_unbound",
  "tenant_forbidden",
  "unknown_member",
  "unsupported_cipher",
  "unsupported_content_encoding",
  "unsupported_media_type",
  "unsupported_spec",
];

/** JSON-RPC error codes of `POST /mcp` (protocols.md §3.2). */
const EXPECTED_RPC_ERRORS = [-32700, -32600, -32601, -32602, -32000];

/** The `error` members of recorded JSON bodies, and the JSON-RPC error codes. */
function errorsIn(exchanges: JsonObject[]): { codes: Set<string>; rpc: Set<number> } {
  const codes = new Set<string>();
  const rpc = new Set<number>();
  const visit = (value: JsonValue | undefined, top: boolean) => {
    if (Array.isArray(value)) for (const item of value) visit(item, top);
    if (!isObject(value)) return;
    const error = value.get("error");
    if (top && typeof error === "string") codes.add(error);
    if (isObject(error) && typeof error.get("code") === "number")
      rpc.add(error.get("code") as number);
  };
  for (const exchange of exchanges) {
    const response = exchange.get("response");
    if (isObject(response)) visit(response.get("json"), true);
  }
  return { codes, rpc };
}

describe("recorded answers", () => {
  const recorder = new Recorder();
  let operations: string[] = [];
  let elapsedMs = 0;

  before(async () => {
    const started = performance.now();
    await recordAll(recorder);
    elapsedMs = performance.now() - started;
    // The routes the OpenAPI document names: each must have been asked something.
    const openapi = recorder.exchanges.find(
      (exchange) => exchange.get("name") === "GET /openapi.json",
    );
    const response = openapi?.get("response");
    const body = isObject(response) ? response.get("json") : undefined;
    const paths = isObject(body) ? body.get("paths") : undefined;
    if (!isObject(paths)) throw new Error("the recording has no OpenAPI document");
    // Fastify answers HEAD for every GET route; those answers are recorded too.
    operations = [...paths].flatMap(([path, methods]) => {
      const template = path.replace(/\{([^}]+)\}/g, ":$1");
      const names = isObject(methods) ? [...methods.keys()].map((m) => m.toUpperCase()) : [];
      if (names.includes("GET")) names.push("HEAD");
      return names.map((method) => `${method} ${template}`);
    });
  });

  test(RECORD ? "re-record the answers" : "the service answers as recorded", () => {
    const header = new Map<string, JsonValue>([
      [
        "about",
        "Answers of every receiptd route, recorded by test/service/recorded-answers.test.ts",
      ],
      ["re-record", COMMAND],
      ["placeholders", new Map(Object.entries(PLACEHOLDERS))],
    ]);
    if (RECORD) {
      writeFileSync(RECORDING, formatRecording(header, recorder.exchanges));
      process.stdout.write(
        `# recorded ${recorder.exchanges.length} exchanges in ${Math.round(elapsedMs)} ms\n`,
      );
      return;
    }
    const recorded = parseRecording(readFileSync(RECORDING, "utf8"));
    const changed = differences(recorded, recorder.exchanges);
    if (changed.length > 0) {
      const shown = changed.slice(0, 40);
      assert.fail(
        `${changed.length} of ${recorded.length} recorded exchanges are answered differently ` +
          `(first differing field of each):\n  ${shown.join("\n  ")}` +
          `${changed.length > shown.length ? `\n  … and ${changed.length - shown.length} more` : ""}` +
          `\nIf the change is intended, re-record with: ${COMMAND}`,
      );
    }
  });

  test("every route of /openapi.json (and HEAD of each GET) is asked something", () => {
    assert.ok(operations.length > 0);
    const missed = operations.filter((operation) => !recorder.coverage.has(operation));
    assert.deepEqual(missed, [], `routes without a recorded exchange: ${missed.join(", ")}`);
  });

  test("every error code reachable from outside is recorded", () => {
    const { codes, rpc } = errorsIn(recorder.exchanges);
    const missing = EXPECTED_ERRORS.filter((code) => !codes.has(code));
    assert.deepEqual(missing, [], `error codes never answered: ${missing.join(", ")}`);
    const missingRpc = EXPECTED_RPC_ERRORS.filter((code) => !rpc.has(code));
    assert.deepEqual(missingRpc, [], `JSON-RPC errors never answered: ${missingRpc.join(", ")}`);
  });

  test("nothing machine- or run-specific is in the recording", () => {
    const text = dumpCompact(recorder.exchanges);
    for (const leak of [
      tmpdir(),
      process.cwd(),
      CORPUS_DIR,
      "receiptd-service-test-",
      "127.0.0.1:",
    ]) {
      assert.ok(!text.includes(leak), `the recording contains '${leak}'`);
    }
    const host = hostname();
    if (host.length >= 6 && host !== "localhost") {
      assert.ok(!text.includes(host), "the recording contains this machine's host name");
    }
  });
});
