/**
 * The result budget over real sockets (issue 16, response amplification): a legal 1 MiB
 * body that asks for 1.7 million errors is refused `400 result_too_large` with its limit, on
 * `POST /verify` and as an MCP batch; a request whose errors and reasons fit exactly is
 * answered in full; the limit is published in `/info` and `/openapi.json`.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { amplificationBatch, amplificationMcpBatch } from "../../bench/fixtures.js";
import { ResultBudget } from "../../src/verifier/bundle/budget.js";
import { verifyBundle } from "../../src/verifier/bundle/verify-bundle.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { corpusBytes } from "../support/corpus.js";
import { startTestService, type TestService } from "./support/service.js";

const DEFAULT_LIMIT = 4 * 1024 * 1024;

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  // The one revision with JSON-RPC batches.
  "mcp-protocol-version": "2025-03-26",
};

const GOOD = corpusBytes("vectors/02_happy_full.json").toString("utf8");
const TAMPERED = corpusBytes("vectors/03_tampered_body.json").toString("utf8");

/** Bytes the errors and reasons of one bundle's verdict take in the answer. */
function entryBytes(bundleText: string): number {
  const budget = new ResultBudget(Number.MAX_SAFE_INTEGER);
  verifyBundle(parseJson(bundleText), { budget });
  return budget.spent;
}

function toolCall(bundleText: string, id: number): string {
  return (
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call",` +
    `"params":{"name":"verify_bundle","arguments":{"bundle":${bundleText}}}}`
  );
}

interface Refusal {
  error: string;
  detail: string;
  limit: number;
}

interface RpcRefusal {
  jsonrpc: string;
  id: unknown;
  error: { code: number; message: string; data: Refusal };
}

async function listening(service: TestService): Promise<string> {
  await service.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = service.app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

function assertRefusal(body: Refusal, limit: number): void {
  assert.deepEqual(Object.keys(body), ["error", "detail", "limit"]);
  assert.equal(body.error, "result_too_large");
  assert.equal(body.limit, limit);
  assert.match(body.detail, new RegExp(`more than ${limit} bytes of errors and reasons`));
}

describe("the result budget with the default limit", () => {
  let service: TestService;
  let origin: string;
  before(async () => {
    service = await startTestService();
    origin = await listening(service);
  });
  after(() => service.close());

  const post = (path: string, body: Buffer | string, headers: Record<string, string> = {}) =>
    fetch(`${origin}${path}`, {
      method: "POST",
      body,
      headers: { ...service.authHeaders, ...headers },
    });

  test("1 MiB of 34 bundles × 10,000 {} receipts to /verify → 400 result_too_large", async () => {
    const body = amplificationBatch();
    assert.ok(body.length <= service.config.limits.maxBodyBytes);
    const response = await post("/verify", body);
    assert.equal(response.status, 400);
    assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
    assertRefusal((await response.json()) as Refusal, DEFAULT_LIMIT);
  });

  test("the same bundles as an MCP batch of verify_bundle calls → 400, -32600 with the limit", async () => {
    const body = amplificationMcpBatch();
    assert.ok(body.length <= service.config.limits.maxBodyBytes);
    const response = await post("/mcp", body, MCP_HEADERS);
    assert.equal(response.status, 400);
    const answer = (await response.json()) as RpcRefusal;
    assert.equal(answer.jsonrpc, "2.0");
    assert.equal(answer.id, null);
    assert.equal(answer.error.code, -32600);
    assert.match(answer.error.message, new RegExp(`more than ${DEFAULT_LIMIT} bytes`));
    assertRefusal(answer.error.data, DEFAULT_LIMIT);
  });

  test("one bundle of 10,000 {} receipts still gets the reference's full answer", async () => {
    const bundle = `{"spec":"continuity-receipt/0.4","task_id":"x","receipts":[{}${",{}".repeat(9_999)}]}`;
    const response = await post("/verify", bundle);
    assert.equal(response.status, 200);
    const { service: name, ...payload } = (await response.json()) as {
      service: string;
      verdict: string;
      errors: unknown[];
    };
    assert.equal(name, "continuity-receipt-verify");
    assert.equal(payload.verdict, "UNTRUSTED");
    assert.ok(payload.errors.length > 50_000);
    assert.deepEqual(payload, JSON.parse(dumpCompact(verifyBundle(parseJson(bundle)))));
    assert.ok(entryBytes(bundle) <= DEFAULT_LIMIT, "room for the per-bundle receipt limit");
  });

  test("/info and /openapi.json publish the limit", async () => {
    const info = (await (await fetch(`${origin}/info`)).json()) as {
      limits: Record<string, unknown>;
    };
    assert.equal(info.limits.max_result_bytes, DEFAULT_LIMIT);
    const openapi = (await (await fetch(`${origin}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const refusals = openapi.paths["/verify"]?.post?.responses["400"]?.description ?? "";
    assert.match(refusals, /result_too_large/);
    assert.match(refusals, new RegExp(String(DEFAULT_LIMIT)));
    assert.match(
      openapi.paths["/mcp"]?.post?.responses["400"]?.description ?? "",
      /result_too_large/,
    );
  });
});

describe("a configured limit: exactly at it is answered, one entry more is refused", () => {
  // Three tampered bundles' errors fill the budget to the byte; a fourth passes it.
  const limit = 3 * entryBytes(TAMPERED);
  let service: TestService;
  let origin: string;
  before(async () => {
    service = await startTestService({ limits: { maxResultBytes: limit } });
    origin = await listening(service);
  });
  after(() => service.close());

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${origin}${path}`, {
      method: "POST",
      body,
      headers: { ...service.authHeaders, ...headers },
    });
  const batch = (...bundles: string[]) => `{"bundles":[${bundles.join(",")}]}`;

  test("a batch whose errors take exactly the limit is verified", async () => {
    assert.ok(limit > 0 && entryBytes(GOOD) === 0);
    const response = await post("/verify", batch(TAMPERED, GOOD, TAMPERED, TAMPERED, GOOD));
    assert.equal(response.status, 200);
    const payload = (await response.json()) as { count: number; results: { verdict: string }[] };
    assert.equal(payload.count, 5);
    assert.deepEqual(
      payload.results.map((result) => result.verdict),
      ["UNTRUSTED", "TRUSTED", "UNTRUSTED", "UNTRUSTED", "TRUSTED"],
    );
  });

  test("one more erring bundle → 400 result_too_large with the configured limit", async () => {
    const response = await post("/verify", batch(TAMPERED, TAMPERED, TAMPERED, TAMPERED));
    assert.equal(response.status, 400);
    assertRefusal((await response.json()) as Refusal, limit);
  });

  test("MCP: a batch of calls within the limit is answered, one call more is refused", async () => {
    const within = `[${[TAMPERED, GOOD, TAMPERED, TAMPERED].map(toolCall).join(",")}]`;
    const answered = await post("/mcp", within, MCP_HEADERS);
    assert.equal(answered.status, 200);
    const responses = (await answered.json()) as { id: number; result?: { isError: boolean } }[];
    assert.deepEqual(
      responses.map((response) => [response.id, response.result?.isError]),
      [
        [0, false],
        [1, false],
        [2, false],
        [3, false],
      ],
    );
    const over = `[${[TAMPERED, TAMPERED, TAMPERED, TAMPERED].map(toolCall).join(",")}]`;
    const refused = await post("/mcp", over, MCP_HEADERS);
    assert.equal(refused.status, 400);
    const answer = (await refused.json()) as RpcRefusal;
    assert.equal(answer.id, null);
    assertRefusal(answer.error.data, limit);
  });

  test("/info publishes the configured limit", async () => {
    const info = (await (await fetch(`${origin}/info`)).json()) as {
      limits: Record<string, unknown>;
    };
    assert.equal(info.limits.max_result_bytes, limit);
  });
});

describe("one bundle over the limit", () => {
  const limit = entryBytes(TAMPERED) - 1;
  let service: TestService;
  before(async () => {
    service = await startTestService({ limits: { maxResultBytes: limit } });
  });
  after(() => service.close());

  test("/verify refuses it", async () => {
    const response = await service.app.inject({
      method: "POST",
      url: "/verify",
      payload: TAMPERED,
    });
    assert.equal(response.statusCode, 400);
    assertRefusal(response.json<Refusal>(), limit);
  });

  test("MCP refuses a single verify_bundle call under the call's own id", async () => {
    const response = await service.app.inject({
      method: "POST",
      url: "/mcp",
      headers: { "content-type": "application/json", accept: "application/json" },
      payload: toolCall(TAMPERED, 7),
    });
    assert.equal(response.statusCode, 400);
    const answer = response.json<RpcRefusal>();
    assert.equal(answer.id, 7);
    assert.equal(answer.error.code, -32600);
    assertRefusal(answer.error.data, limit);
  });

  test("/erc8004/validate, whose evaluation carries the verdict, refuses it too", async () => {
    const taskId = (parseJson(TAMPERED) as Map<string, unknown>).get("task_id") as string;
    const taskHash = `sha256:${createHash("sha256").update(taskId).digest("hex")}`;
    const response = await service.app.inject({
      method: "POST",
      url: "/erc8004/validate",
      headers: { "content-type": "application/json" },
      payload: `{"request_id":"0x${"5a".repeat(32)}","task_hash":"${taskHash}","bundle":${TAMPERED}}`,
    });
    assert.equal(response.statusCode, 400);
    assertRefusal(response.json<Refusal>(), limit);
  });

  test("a bundle without errors still passes", async () => {
    const response = await service.app.inject({ method: "POST", url: "/verify", payload: GOOD });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json<{ verdict: string }>().verdict, "TRUSTED");
  });
});
