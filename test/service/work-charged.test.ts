/**
 * Work done is charged (issue 22, findings 5 and 9), over real sockets with an API key: a
 * `422 task_hash_unbound` (which carries the whole evaluation) and a `400 result_too_large`
 * found while verifying are charged to the key's cap and billed like results, and their audit
 * lines say `"charged":true`; MCP `verify_anchor` results share the body's result budget. MCP
 * tool errors inside a `200` are charged only when a call of the body carried work done, as
 * HTTP charges its endpoints' answers (issue 37, item 6).
 * (x402: one authorization settles one unbound validation, in plugins/x402.test.ts.)
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { otsProof, sha256 } from "../../bench/support/ots.js";
import { meterMonth } from "../../src/access/billing.js";
import { DocumentStoreUnavailableError } from "../../src/storage/document-store.js";
import { corpusBytes } from "../support/corpus.js";
import { startTestService, type TestService } from "./support/service.js";

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const TAMPERED = corpusBytes("vectors/03_tampered_body.json").toString("utf8");
const GOOD = corpusBytes("vectors/01_happy_minimal.json").toString("utf8");
const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-03-26",
};
/** Room for 30 tampered verdicts' errors (237 bytes each), and for one anchor answer. */
const LIMIT = 8 * 1024;
const LEAVES = 40;

interface Sent {
  status: number;
  remaining: string | null;
  text: string;
}

describe("refusals after real work are charged", () => {
  let service: TestService;
  let base: string;
  let key: string;
  let keyId: string;
  before(async () => {
    service = await startTestService(
      { limits: { maxResultBytes: LIMIT } },
      { clock: () => NOW, anonymous: true },
    );
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    const created = await service.app.accessServices.keys.create({ name: "work", dailyCap: 100 });
    key = created.key;
    keyId = created.record.id;
  });
  after(() => service.close());

  const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key, ...headers },
      body,
    });
    const sent: Sent = {
      status: response.status,
      remaining: response.headers.get("x-ratelimit-remaining"),
      text: await response.text(),
    };
    return sent;
  };

  const anchorCall = (id: number) => {
    const digest = sha256(`work-charged ${id}`);
    const calendars = Array.from({ length: LEAVES }, (_, i) => `https://c${i}.example`);
    const proof = otsProof(digest, { calendars }).toString("base64");
    return JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: {
        name: "verify_anchor",
        arguments: { proof, digest: `sha256:${digest.toString("hex")}` },
      },
    });
  };

  test("charged and billed: 422 task_hash_unbound, 400 result_too_large; not: invalid_json", async () => {
    const unbound = await post(
      "/erc8004/validate",
      `{"request_id":"0x${"11".repeat(32)}","task_hash":"sha256:${"00".repeat(32)}","bundle":${GOOD}}`,
    );
    assert.equal(unbound.status, 422, unbound.text);
    const evaluation = JSON.parse(unbound.text) as { error: string; verdict: string };
    assert.deepEqual([evaluation.error, evaluation.verdict], ["task_hash_unbound", "TRUSTED"]);
    assert.equal(unbound.remaining, "99");

    const tooLarge = await post("/verify", `{"bundles":[${Array(40).fill(TAMPERED).join(",")}]}`);
    assert.equal(tooLarge.status, 400);
    assert.equal((JSON.parse(tooLarge.text) as { error: string }).error, "result_too_large");
    assert.equal(tooLarge.remaining, "98");

    const invalid = await post("/verify", '{"a":1,"a":2}');
    assert.equal(invalid.status, 400);
    assert.equal(invalid.remaining, "98");

    await service.app.accessServices.audit.flush();
    const usage = await meterMonth(service.config.auditDir, "2026-11");
    const line = usage.keys.find((entry) => entry.keyId === keyId);
    assert.deepEqual({ calls: line?.calls, unbilled: line?.unbilled }, { calls: 2, unbilled: 1 });
    const audit = await readFile(join(service.config.auditDir, "2026-11-26.jsonl"), "utf8");
    const statuses = audit
      .trim()
      .split("\n")
      .map((text) => JSON.parse(text) as { status: number; charged?: boolean })
      .map((entry) => [entry.status, entry.charged ?? false]);
    assert.deepEqual(statuses, [
      [422, true],
      [400, true],
      [400, false],
    ]);
  });

  test("MCP verify_anchor batches count against the result budget, and the refusal is charged", async () => {
    const one = await post("/mcp", anchorCall(1), MCP_HEADERS);
    assert.equal(one.status, 200, one.text);
    const answerBytes = Buffer.byteLength(one.text);
    assert.ok(answerBytes < LIMIT, `one answer: ${answerBytes} bytes`);
    const before = Number(one.remaining);
    const calls = Math.ceil(LIMIT / answerBytes) + 1;
    const batch = `[${Array.from({ length: calls }, (_, i) => anchorCall(i)).join(",")}]`;
    const refused = await post("/mcp", batch, MCP_HEADERS);
    assert.equal(refused.status, 400);
    const rpc = JSON.parse(refused.text) as { error: { data: { error: string; limit: number } } };
    assert.deepEqual(rpc.error.data.error, "result_too_large");
    assert.equal(rpc.error.data.limit, LIMIT);
    assert.equal(refused.remaining, String(before - 1));
  });
});

describe("MCP in-band tool errors are charged as their HTTP answers are", () => {
  let service: TestService;
  let base: string;
  let key: string;
  let keyId: string;
  before(async () => {
    service = await startTestService({}, { clock: () => NOW, anonymous: true });
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    const created = await service.app.accessServices.keys.create({ name: "inband", dailyCap: 100 });
    key = created.key;
    keyId = created.record.id;
  });
  after(() => service.close());

  const call = (id: number, name: string, args: object) =>
    JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
  const DIGEST = `sha256:${"cd".repeat(32)}`;

  /** Posts `body` and answers the status, whether any result is a tool error, and the cap's change. */
  const charge = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key, ...headers },
      body,
    });
    const text = await response.text();
    return {
      status: response.status,
      remaining: Number(response.headers.get("x-ratelimit-remaining")),
      text,
    };
  };

  test("a notarize that finds the store down is not charged, like POST /notarize's 503; every tool follows the rule", async () => {
    const store = service.app.documentStore;
    const { create } = store;
    store.create = async (): Promise<never> => {
      throw new DocumentStoreUnavailableError("the test took the store down");
    };
    let http: Awaited<ReturnType<typeof charge>>;
    let mcp: Awaited<ReturnType<typeof charge>>;
    try {
      http = await charge("/notarize", JSON.stringify({ context_digest: DIGEST }));
      mcp = await charge("/mcp", call(1, "notarize", { context_digest: DIGEST }), MCP_HEADERS);
    } finally {
      store.create = create;
    }
    assert.equal(http.status, 503, http.text);
    assert.equal(http.remaining, 100);
    assert.equal(mcp.status, 200, mcp.text);
    const failed = JSON.parse(mcp.text) as {
      result: { isError: boolean; structuredContent: object };
    };
    assert.equal(failed.result.isError, true);
    assert.deepEqual(
      (failed.result.structuredContent as { error: string }).error,
      "store_unavailable",
    );
    assert.equal(mcp.remaining, 100, "the in-band store_unavailable is not charged");

    // Each tool's uncharged failures, and a call the JSON-RPC layer refuses.
    const uncharged = [
      call(2, "notarize", { context_digest: "sha256:00" }),
      call(3, "get_revocations", {
        issuer: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
      }),
      call(4, "verify_anchor", { proof: "not base64!" }),
      call(5, "no_such_tool", {}),
    ];
    for (const body of uncharged) {
      const sent = await charge("/mcp", body, MCP_HEADERS);
      assert.equal(sent.status, 200, sent.text);
      assert.ok(sent.text.includes('"isError":true') || sent.text.includes('"error":'), sent.text);
      assert.equal(sent.remaining, 100, body);
    }

    // Work done is charged: a stored statement, a verdict; a batch once, if any call did work.
    const stored = await charge(
      "/mcp",
      call(6, "notarize", { context_digest: DIGEST }),
      MCP_HEADERS,
    );
    assert.ok(stored.text.includes('"isError":false'), stored.text);
    assert.equal(stored.remaining, 99);
    const verdict = await charge(
      "/mcp",
      call(7, "verify_bundle", { bundle: JSON.parse(GOOD) }),
      MCP_HEADERS,
    );
    assert.ok(verdict.text.includes('"isError":false'), verdict.text);
    assert.equal(verdict.remaining, 98);
    const mixed = await charge(
      "/mcp",
      `[${uncharged[0]},${call(8, "verify_bundle", { bundle: JSON.parse(GOOD) })}]`,
      MCP_HEADERS,
    );
    assert.equal(mixed.status, 200, mixed.text);
    assert.equal(mixed.remaining, 97);

    // The bill agrees with the cap: three charged calls, the rest unbilled.
    await service.app.accessServices.audit.flush();
    const usage = await meterMonth(service.config.auditDir, "2026-11");
    const line = usage.keys.find((entry) => entry.keyId === keyId);
    assert.deepEqual({ calls: line?.calls, unbilled: line?.unbilled }, { calls: 3, unbilled: 6 });
  });
});
