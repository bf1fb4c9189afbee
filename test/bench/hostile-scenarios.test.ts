/**
 * The hostile bench scenarios (issue 16): legal 1 MiB bodies, 16 connections, and the
 * refusal `result_too_large` counted as the expected answer (the smoke run in `npm test`
 * fails on any other), with the 600 MB peak-RSS goal.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  AMPLIFYING_BUNDLES,
  amplificationBatch,
  amplificationMcpBatch,
  didKeyBombBundle,
  emptyObjectsBundle,
} from "../../bench/fixtures.js";
import { type Deployment, SCENARIOS } from "../../bench/scenarios.js";
import type { ScenarioResult } from "../../bench/types.js";
import { DEFAULT_LIMITS } from "../../src/service/config.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { isArray, isObject } from "../../src/verifier/json/value.js";

const deployment: Deployment = {
  label: "test",
  origin: "http://127.0.0.1:1",
  apiKey: "svc_test",
  mode: "embedded",
};

function scenario(id: string) {
  const found = SCENARIOS.find((candidate) => candidate.id === id);
  assert.ok(found, `scenario ${id}`);
  return found;
}

const REFUSAL =
  '{"error":"result_too_large","detail":"the verdicts would hold more than 4194304 bytes of errors and reasons; send fewer or smaller bundles per request","limit":4194304}';

describe("hostile bench scenarios", () => {
  test("the bodies are legal: within the default body limit", () => {
    const limit = DEFAULT_LIMITS.maxBodyBytes;
    for (const body of [
      emptyObjectsBundle(1_040_000),
      amplificationBatch(),
      amplificationMcpBatch(),
      didKeyBombBundle(1_040_000),
    ]) {
      assert.ok(body.length > 1_000_000 && body.length <= limit, `${body.length} bytes`);
    }
  });

  test("the amplification batch is 34 bundles of 10,000 {} receipts", () => {
    const batch = parseJson(amplificationBatch());
    assert.ok(isObject(batch));
    const bundles = batch.get("bundles");
    assert.ok(isArray(bundles) && bundles.length === AMPLIFYING_BUNDLES);
    for (const bundle of bundles) {
      assert.ok(isObject(bundle));
      const receipts = bundle.get("receipts");
      assert.ok(isArray(receipts) && receipts.length === 10_000);
    }
  });

  test("the refusal is the expected answer of the amplification scenarios; a 200 is not", async () => {
    for (const id of ["hostile-batch", "hostile-mcp"]) {
      const hostile = scenario(id);
      assert.equal(hostile.connections, 16);
      await hostile.prepare?.(deployment);
      const spec = hostile.request(0, deployment);
      assert.equal(hostile.accept(400, REFUSAL, spec), true, id);
      assert.equal(hostile.accept(200, '{"results":[]}', spec), false, id);
    }
    const rpcRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":${REFUSAL}}}`;
    const mcp = scenario("hostile-mcp");
    assert.equal(mcp.accept(400, rpcRefusal, mcp.request(0, deployment)), true);
  });

  test("16 bundles of {} receipts expect the reference's too_many_receipts verdict", async () => {
    const empty = scenario("hostile-empty");
    assert.equal(empty.connections, 16);
    await empty.prepare?.(deployment);
    const spec = empty.request(0, deployment);
    const verdict =
      '{"verdict":"UNTRUSTED","errors":[{"code":"too_many_receipts","detail":"346665 receipts exceeds limit 10000","receipt_id":null}]}';
    assert.equal(empty.accept(200, verdict, spec), true);
    assert.equal(empty.accept(400, REFUSAL, spec), false);
  });

  test("the did:key bombs expect a verdict, the key being no key (issue 22)", async () => {
    const bombs = scenario("hostile-did-key");
    assert.equal(bombs.connections, 16);
    await bombs.prepare?.(deployment);
    const spec = bombs.request(0, deployment);
    assert.ok(spec.body !== undefined && spec.body.length <= DEFAULT_LIMITS.maxBodyBytes);
    assert.equal(bombs.accept(200, '{"verdict":"UNTRUSTED","errors":[]}', spec), true);
    assert.equal(bombs.accept(503, '{"error":"work_limit_exceeded","limit":15000}', spec), false);
  });

  test("the goal is a 400 MB peak (issue 15)", () => {
    const result = (peakRssMiB: number, errors = 0) =>
      ({ peakRssMiB, errors }) as unknown as ScenarioResult;
    const goal = scenario("hostile-batch").goal!;
    // 381 MiB is 399.5 MB; 382 MiB is 400.6 MB.
    assert.deepEqual(goal(result(381), deployment), {
      description: "peak RSS ≤ 400 MB",
      met: true,
    });
    assert.equal(goal(result(382), deployment)?.met, false);
    assert.equal(goal(result(300, 1), deployment)?.met, false);
  });
});
