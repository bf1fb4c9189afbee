/**
 * The MCP tool surface (service.md §7, protocols.md §3): JSON-RPC codes and HTTP statuses via
 * `app.inject()`, verdict parity of the tools with their HTTP endpoints, and the official MCP
 * TypeScript SDK client over a real socket.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { answerMcpRequest, type McpAnswer } from "../../../../src/service/endpoints/mcp/answer.js";
import { generateSigner } from "../../../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import {
  buildRevocationDocument,
  signRevocationStatement,
} from "../../../../src/verifier/revocations/document.js";
import { verifyVerificationReceipt } from "../../../../src/verifier/verification-receipt/index.js";
import { corpusBytes, corpusPath } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

/** The public origin the MCP tests' service is configured with. */
const PUBLIC_BASE_URL = "https://receiptd.example";

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

const HELLO_PROOF = corpusBytes("vectors/anchor/hello-world.txt.ots").toString("base64");
const HELLO_DIGEST = "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340";
const HELLO_HEADER = (
  JSON.parse(readFileSync(corpusPath("vectors/anchor/headers.json"), "utf8")) as {
    headers: Record<string, string>;
  }
).headers["358391"] as string;

interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

interface RpcResponse {
  jsonrpc: string;
  id: unknown;
  result?: Record<string, unknown>;
  error?: RpcError;
}

interface ToolResult {
  content: { type: string; text: string }[];
  structuredContent: Record<string, unknown>;
  isError: boolean;
}

/** A JSON-RPC request as text; `params` is spliced in as JSON text so bundles stay exact. */
function request(method: string, params?: string, id: string | number = 1): string {
  const paramsMember = params === undefined ? "" : `,"params":${params}`;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"${method}"${paramsMember}}`;
}

function toolCall(name: string, args: string, id: string | number = 1): string {
  return request("tools/call", `{"name":"${name}","arguments":${args}}`, id);
}

describe("POST /mcp", () => {
  let service: TestService;
  const post = (payload: string | Buffer, headers: Record<string, string> = {}) =>
    service.app.inject({
      method: "POST",
      url: "/mcp",
      headers: { ...MCP_HEADERS, ...headers },
      payload,
    });
  const rpc = async (payload: string | Buffer, headers: Record<string, string> = {}) => {
    const response = await post(payload, headers);
    assert.equal(response.statusCode, 200, response.body);
    return response.json<RpcResponse>();
  };
  const rpcError = async (
    payload: string | Buffer,
    statusCode: number,
    headers: Record<string, string> = {},
  ) => {
    const response = await post(payload, headers);
    assert.equal(response.statusCode, statusCode, response.body);
    assert.match(String(response.headers["content-type"]), /^application\/json/);
    const body = response.json<RpcResponse>();
    assert.equal(body.jsonrpc, "2.0");
    assert.equal(body.result, undefined);
    assert.ok(body.error, response.body);
    return body as RpcResponse & { error: RpcError };
  };
  const callTool = async (name: string, args: string) => {
    const body = await rpc(toolCall(name, args));
    assert.equal(body.error, undefined, JSON.stringify(body.error));
    return body.result as unknown as ToolResult;
  };

  before(async () => {
    service = await startTestService({
      payments: { settings: null, facilitatorUrl: null, publicBaseUrl: PUBLIC_BASE_URL },
      mcpAllowedOrigins: ["http://localhost:5173"],
    });
  });
  after(() => service.close());

  describe("lifecycle and discovery", () => {
    const initializeParams = (version: string) =>
      JSON.stringify({
        protocolVersion: version,
        capabilities: {},
        clientInfo: { name: "test", version: "1" },
      });

    test("initialize answers the client's version, capabilities and server info; no session", async () => {
      const response = await post(request("initialize", initializeParams("2025-06-18")));
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
      assert.equal(response.headers["mcp-session-id"], undefined);
      const body = response.json<RpcResponse>();
      assert.equal(body.id, 1);
      assert.deepEqual(
        { ...body.result, instructions: undefined },
        {
          protocolVersion: "2025-06-18",
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: "receiptd", title: "Continuity Receipt verifier", version: "0.1.0" },
          instructions: undefined,
        },
      );
      assert.equal(typeof body.result?.instructions, "string");
    });

    for (const [asked, answered] of [
      ["2025-03-26", "2025-03-26"],
      ["2025-11-25", "2025-06-18"],
      ["2024-11-05", "2025-06-18"],
      ["not-a-version", "2025-06-18"],
    ]) {
      test(`initialize asking for ${asked} is answered ${answered}`, async () => {
        const body = await rpc(request("initialize", initializeParams(asked as string)));
        assert.equal(body.result?.protocolVersion, answered);
      });
    }

    test("an unsupported MCP-Protocol-Version header on initialize does not matter", async () => {
      const body = await rpc(request("initialize", initializeParams("2025-06-18")), {
        "mcp-protocol-version": "1999-01-01",
      });
      assert.equal(body.result?.protocolVersion, "2025-06-18");
    });

    for (const [name, params, detail] of [
      ["no params", undefined, "params must have required property 'protocolVersion'"],
      [
        "no clientInfo",
        '{"protocolVersion":"2025-06-18","capabilities":{}}',
        "params must have required property 'clientInfo'",
      ],
      [
        "a number for a version",
        '{"protocolVersion":20250618,"capabilities":{},"clientInfo":{"name":"a","version":"1"}}',
        "params/protocolVersion must be string",
      ],
    ] as const) {
      test(`initialize with ${name} → -32602`, async () => {
        const body = await rpcError(request("initialize", params), 200);
        assert.deepEqual(body, {
          jsonrpc: "2.0",
          id: 1,
          error: { code: -32602, message: `Invalid params: ${detail}` },
        });
      });
    }

    for (const notification of [
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
      '{"jsonrpc":"2.0","method":"no/such/method"}',
      '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"verify_bundle"}}',
    ]) {
      test(`a notification → 202 with no body: ${notification}`, async () => {
        const response = await post(notification, { "mcp-protocol-version": "2025-06-18" });
        assert.equal(response.statusCode, 202);
        assert.equal(response.body, "");
        assert.equal(response.headers["content-type"], undefined);
      });
    }

    test("a client's JSON-RPC response is accepted and ignored → 202", async () => {
      const response = await post('{"jsonrpc":"2.0","id":"s1","result":{}}');
      assert.equal(response.statusCode, 202);
      assert.equal(response.body, "");
    });

    test("ping → {} without initialize (stateless)", async () => {
      const body = await rpc(request("ping", undefined, "p-1"));
      assert.deepEqual(body, { jsonrpc: "2.0", id: "p-1", result: {} });
    });

    test("an integer id beyond 2^53 is echoed digit for digit", async () => {
      const id = "123456789012345678901234567890";
      const response = await post(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, `{"jsonrpc":"2.0","id":${id},"result":{}}`);
    });

    test("tools/list names the four tools with object input schemas", async () => {
      const body = await rpc(request("tools/list"));
      const tools = body.result?.tools as {
        name: string;
        description: string;
        inputSchema: { type: string; required: string[] };
      }[];
      assert.deepEqual(
        tools.map((tool) => [tool.name, tool.inputSchema.type, tool.inputSchema.required]),
        [
          ["verify_bundle", "object", ["bundle"]],
          ["verify_anchor", "object", ["proof", "digest"]],
          ["get_revocations", "object", ["issuer"]],
          // One of two digests is required: the library says so (missing_required_digest).
          ["notarize", "object", []],
        ],
      );
      for (const tool of tools) assert.ok(tool.description.length > 20);
      assert.equal(body.result?.nextCursor, undefined);
    });

    test("tools/list with a cursor → -32602 (no cursor is ever handed out)", async () => {
      const body = await rpcError(request("tools/list", '{"cursor":"abc"}'), 200);
      assert.deepEqual(body.error, { code: -32602, message: "Invalid params: unknown cursor" });
    });
  });

  describe("JSON-RPC errors", () => {
    for (const [name, payload, detail] of [
      ["an empty body", "", "Expecting value: line 1 column 1 (char 0)"],
      ["trailing data", '{"jsonrpc":"2.0"} x', "Extra data: line 1 column 19 (char 18)"],
      [
        "a duplicate member",
        '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
        "duplicate JSON object member: 'id'",
      ],
    ] as const) {
      test(`${name} → 400, -32700 with the parser's detail`, async () => {
        const body = await rpcError(payload, 400);
        assert.deepEqual(body, {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32700, message: "Parse error", data: { detail } },
        });
      });
    }

    test("a duplicate member deep inside a bundle is a parse error too", async () => {
      const body = await rpcError(toolCall("verify_bundle", '{"bundle":{"a":1,"a":1}}'), 400);
      assert.equal(body.error.code, -32700);
    });

    for (const [name, payload, id, reason] of [
      ["a number", "5", null, "a JSON-RPC message must be an object"],
      ["jsonrpc 1.0", '{"jsonrpc":"1.0","id":7,"method":"ping"}', 7, 'jsonrpc must be "2.0"'],
      ["no jsonrpc member", '{"id":"x","method":"ping"}', "x", 'jsonrpc must be "2.0"'],
      [
        "a null id",
        '{"jsonrpc":"2.0","id":null,"method":"ping"}',
        null,
        "id must be a string or an integer",
      ],
      [
        "a fractional id",
        '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        null,
        "id must be a string or an integer",
      ],
      [
        "a method that is not a string",
        '{"jsonrpc":"2.0","id":3,"method":3}',
        3,
        "method must be a string",
      ],
      [
        "params that are a string",
        '{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}',
        4,
        "params must be an object or an array",
      ],
      [
        "neither method nor result",
        '{"jsonrpc":"2.0","id":5}',
        5,
        "a message needs a method (or, as a response, an id and a result or error)",
      ],
    ] as const) {
      test(`${name} → 400, -32600`, async () => {
        const body = await rpcError(payload, 400);
        assert.deepEqual(body, {
          jsonrpc: "2.0",
          id,
          error: { code: -32600, message: `Invalid Request: ${reason}` },
        });
      });
    }

    for (const method of ["resources/list", "prompts/list", "logging/setLevel", "Ping"]) {
      test(`${method} → 200, -32601`, async () => {
        const body = await rpcError(request(method, undefined, 9), 200);
        assert.deepEqual(body, {
          jsonrpc: "2.0",
          id: 9,
          error: { code: -32601, message: `Method not found: ${method}` },
        });
      });
    }

    for (const [name, payload, detail] of [
      ["an unknown tool", toolCall("verify_everything", "{}"), "unknown tool 'verify_everything'"],
      [
        "no tool name",
        request("tools/call", '{"arguments":{}}'),
        "params must have required property 'name'",
      ],
      [
        "arguments that are not an object",
        request("tools/call", '{"name":"verify_bundle","arguments":[]}'),
        "params/arguments must be object",
      ],
      [
        "no arguments",
        request("tools/call", '{"name":"verify_bundle"}'),
        "arguments must have required property 'bundle'",
      ],
      [
        "a bundle that is not an object",
        toolCall("verify_bundle", '{"bundle":[1]}'),
        "arguments/bundle must be object",
      ],
      [
        "a flag that is not a boolean",
        toolCall("verify_bundle", '{"bundle":{},"receipt":1}'),
        "arguments/receipt must be boolean",
      ],
      [
        "an unexpected argument",
        toolCall("verify_bundle", '{"bundle":{},"caching":true}'),
        "arguments has an unexpected member 'caching'",
      ],
      [
        "a proof that is not a string",
        toolCall("verify_anchor", '{"proof":5,"digest":"00"}'),
        "arguments/proof must be string",
      ],
      [
        "a missing issuer",
        toolCall("get_revocations", "{}"),
        "arguments must have required property 'issuer'",
      ],
      ["params given by position", request("ping", "[]"), "params must be an object"],
    ] as const) {
      test(`${name} → 200, -32602`, async () => {
        const body = await rpcError(payload, 200);
        assert.deepEqual(body, {
          jsonrpc: "2.0",
          id: 1,
          error: { code: -32602, message: `Invalid params: ${detail}` },
        });
      });
    }

    test("an unsupported MCP-Protocol-Version → 400, -32000", async () => {
      const body = await rpcError(request("ping"), 400, { "mcp-protocol-version": "2024-01-01" });
      assert.deepEqual(body, {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32000,
          message: "Bad Request: unsupported MCP-Protocol-Version 2024-01-01",
          data: { supported: ["2025-06-18", "2025-03-26"], requested: "2024-01-01" },
        },
      });
    });

    test("a notification with an unsupported MCP-Protocol-Version → 400 as well", async () => {
      const body = await rpcError('{"jsonrpc":"2.0","method":"notifications/initialized"}', 400, {
        "mcp-protocol-version": "2099-01-01",
      });
      assert.equal(body.error.code, -32000);
    });
  });

  describe("batches (protocol 2025-03-26 only)", () => {
    const ping = (id: number) => request("ping", undefined, id);
    const note = '{"jsonrpc":"2.0","method":"notifications/initialized"}';

    const headerless: Record<string, string> = {};
    for (const headers of [headerless, { "mcp-protocol-version": "2025-03-26" }]) {
      test(`requests are answered in order, notifications skipped (${JSON.stringify(headers)})`, async () => {
        const response = await post(`[${ping(1)},${note},${ping(2)}]`, headers);
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), [
          { jsonrpc: "2.0", id: 1, result: {} },
          { jsonrpc: "2.0", id: 2, result: {} },
        ]);
      });
    }

    test("only notifications → 202", async () => {
      const response = await post(`[${note},${note}]`);
      assert.equal(response.statusCode, 202);
      assert.equal(response.body, "");
    });

    test("bad members get their own errors; the batch still answers 200", async () => {
      const response = await post(
        `[${ping(1)},5,${request("nope", undefined, 3)},${request("initialize", "{}", 4)}]`,
      );
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), [
        { jsonrpc: "2.0", id: 1, result: {} },
        {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid Request: a JSON-RPC message must be an object" },
        },
        { jsonrpc: "2.0", id: 3, error: { code: -32601, message: "Method not found: nope" } },
        {
          jsonrpc: "2.0",
          id: 4,
          error: {
            code: -32600,
            message: "Invalid Request: initialize must not be part of a batch",
          },
        },
      ]);
    });

    for (const [name, payload, headers, message] of [
      ["an empty batch", "[]", {}, "Invalid Request: empty batch"],
      [
        "a batch under 2025-06-18",
        `[${ping(1)}]`,
        { "mcp-protocol-version": "2025-06-18" },
        "Invalid Request: protocol version 2025-06-18 has no JSON-RPC batches",
      ],
      [
        "51 messages",
        `[${Array.from({ length: 51 }, (_, index) => ping(index)).join(",")}]`,
        {},
        "Invalid Request: a batch holds at most 50 messages",
      ],
    ] as const) {
      test(`${name} → 400, -32600`, async () => {
        const body = await rpcError(payload, 400, headers);
        assert.deepEqual(body, { jsonrpc: "2.0", id: null, error: { code: -32600, message } });
      });
    }
  });

  describe("HTTP transport", () => {
    for (const method of ["GET", "DELETE"] as const) {
      test(`${method} /mcp → 405 with Allow: POST`, async () => {
        const response = await service.app.inject({
          method,
          url: "/mcp",
          headers: { accept: "text/event-stream" },
        });
        assert.equal(response.statusCode, 405);
        assert.equal(response.headers.allow, "POST");
        assert.equal(response.json<{ error: string }>().error, "method_not_allowed");
      });
    }

    for (const accept of ["text/html", "text/event-stream", "application/json;q=0, */*"]) {
      test(`Accept: ${accept} → 406`, async () => {
        const response = await post(request("ping"), { accept });
        assert.equal(response.statusCode, 406);
        assert.deepEqual(response.json(), {
          error: "not_acceptable",
          detail: "Accept must allow application/json",
        });
      });
    }

    for (const accept of ["", "*/*", "application/*", "application/json", "text/html, */*;q=0.1"]) {
      test(`Accept: '${accept}' is served`, async () => {
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (accept !== "") headers.accept = accept;
        const response = await service.app.inject({
          method: "POST",
          url: "/mcp",
          headers,
          payload: request("ping"),
        });
        assert.equal(response.statusCode, 200);
      });
    }

    test("Content-Type: text/plain → 415; none at all is read as JSON", async () => {
      const refused = await post(request("ping"), { "content-type": "text/plain" });
      assert.equal(refused.statusCode, 415);
      assert.deepEqual(refused.json(), {
        error: "unsupported_media_type",
        detail: "Content-Type must be application/json",
      });
      const plain = await service.app.inject({
        method: "POST",
        url: "/mcp",
        headers: { accept: MCP_HEADERS.accept },
        payload: request("ping"),
      });
      assert.equal(plain.statusCode, 200);
      const charset = await post(request("ping"), {
        "content-type": "Application/JSON; charset=utf-8",
      });
      assert.equal(charset.statusCode, 200);
    });

    for (const origin of [
      "http://evil.example",
      "null",
      "http://localhost:8081",
      "http://receiptd.example",
      "https://receiptd.example:8443",
    ]) {
      test(`Origin: ${origin} → 403`, async () => {
        const response = await post(request("ping"), { origin });
        assert.equal(response.statusCode, 403);
        assert.equal(response.json<{ error: string }>().error, "origin_not_allowed");
      });
    }

    test("an Origin matching the Host the client sent is not enough (DNS rebinding)", async () => {
      for (const [origin, host] of [
        ["http://evil.example", "evil.example"],
        ["http://127.0.0.1:8080", "127.0.0.1:8080"],
      ] as const) {
        const response = await post(request("ping"), { origin, host });
        assert.equal(response.statusCode, 403, origin);
        assert.deepEqual(response.json(), {
          error: "origin_not_allowed",
          detail: "browser requests are accepted only from the service's configured public origins",
        });
      }
    });

    test("PUBLIC_BASE_URL's origin and MCP_ALLOWED_ORIGINS are served, whatever the Host", async () => {
      for (const origin of [
        PUBLIC_BASE_URL,
        "https://receiptd.example:443",
        "http://localhost:5173",
      ]) {
        const response = await post(request("ping"), { origin, host: "10.0.0.7:8080" });
        assert.equal(response.statusCode, 200, origin);
      }
    });

    test("a body over 1 MiB → 413 body_too_large", async () => {
      const response = await post(
        `${request("ping").slice(0, -1)},"pad":"${"x".repeat(1_048_576)}"}`,
      );
      assert.equal(response.statusCode, 413);
      assert.deepEqual(response.json(), { error: "body_too_large", limit: 1_048_576 });
    });
  });

  describe("verify_bundle: the verdicts of POST /verify", () => {
    const verify = (query: string, bundle: Buffer) =>
      service.app.inject({
        method: "POST",
        url: `/verify${query}`,
        headers: { "content-type": "application/json" },
        payload: bundle,
      });

    for (const [file, requireAnchor, verdict] of [
      ["vectors/01_happy_minimal.json", false, "TRUSTED"],
      ["vectors/03_tampered_body.json", false, "UNTRUSTED"],
      ["vectors/10b_anchor_missing.json", true, "PROVISIONAL"],
      ["vectors/12_ms_timestamps.json", false, "TRUSTED"],
      ["vectors/22n_count_safe_integer_limit.json", false, "TRUSTED"],
      ["vectors/22m_count_unsafe_json_integer.json", false, "UNTRUSTED"],
      ["vectors/22g_count_overflow.json", false, "UNTRUSTED"],
    ] as const) {
      test(`${file}${requireAnchor ? " (require_anchor)" : ""}: byte-identical payload`, async () => {
        const bundle = corpusBytes(file);
        const expected = await verify(requireAnchor ? "?require_anchor=1" : "", bundle);
        assert.equal(expected.statusCode, 200);
        const result = await callTool(
          "verify_bundle",
          `{"bundle":${bundle},"require_anchor":${requireAnchor}}`,
        );
        assert.equal(result.isError, false);
        assert.equal(result.content.length, 1);
        assert.equal(result.content[0]?.type, "text");
        assert.equal(result.content[0]?.text, expected.body);
        assert.deepEqual(result.structuredContent, expected.json());
        assert.equal(result.structuredContent.verdict, verdict);
      });
    }

    test("receipt: true adds a receipt that verifies against the bundle", async () => {
      const bundle = corpusBytes("vectors/03_tampered_body.json");
      const result = await callTool("verify_bundle", `{"bundle":${bundle},"receipt":true}`);
      const receipt = result.structuredContent.verification_receipt;
      assert.ok(receipt);
      const check = verifyVerificationReceipt(parseJson(JSON.stringify(receipt)), { bundle });
      assert.deepEqual(check.errors, []);
      assert.equal(check.valid, true);
      assert.equal(check.digest_match, true);
    });

    test("a bundle holding floats: same payload, with verification_receipt_error", async () => {
      // A float has no canonical form, so no receipt (and no timestamp) can be issued.
      const minimal = corpusBytes("vectors/01_happy_minimal.json").toString("utf8");
      const bundle = Buffer.from(`{"float_note":1.5,${minimal.slice(minimal.indexOf("{") + 1)}`);
      const expected = await verify("?receipt=1", bundle);
      const result = await callTool("verify_bundle", `{"bundle":${bundle},"receipt":true}`);
      assert.equal(result.content[0]?.text, expected.body);
      assert.match(String(result.structuredContent.verification_receipt_error), /canonicalised/);
    });
  });

  describe("verify_anchor: the results of POST /verify-anchor", () => {
    const verifyAnchor = (body: string) =>
      service.app.inject({
        method: "POST",
        url: "/verify-anchor",
        headers: { "content-type": "application/json" },
        payload: body,
      });

    for (const [name, args, isError] of [
      [
        "a proof confirmed by its header",
        { proof: HELLO_PROOF, digest: `sha256:${HELLO_DIGEST}`, headers: { 358391: HELLO_HEADER } },
        false,
      ],
      ["a proof without headers", { proof: HELLO_PROOF, digest: HELLO_DIGEST }, false],
      [
        "a digest the proof does not commit to",
        { proof: HELLO_PROOF, digest: "ab".repeat(32) },
        false,
      ],
      ["a proof that is not base64", { proof: "not base64!", digest: HELLO_DIGEST }, true],
      [
        "a header that is not hex",
        { proof: HELLO_PROOF, digest: HELLO_DIGEST, headers: { 1: "xyz" } },
        true,
      ],
    ] as const) {
      test(`${name}: same payload, isError ${isError}`, async () => {
        const expected = await verifyAnchor(JSON.stringify(args));
        assert.equal(expected.statusCode, isError ? 400 : 200);
        const result = await callTool("verify_anchor", JSON.stringify(args));
        assert.equal(result.isError, isError);
        assert.equal(result.content[0]?.text, expected.body);
        assert.deepEqual(result.structuredContent, expected.json());
      });
    }

    test("the header confirms the hello-world proof", async () => {
      const result = await callTool(
        "verify_anchor",
        JSON.stringify({
          proof: HELLO_PROOF,
          digest: HELLO_DIGEST,
          headers: { 358391: HELLO_HEADER },
        }),
      );
      assert.equal(result.structuredContent.status, "verified");
      assert.equal(result.structuredContent.code, "anchor_verified");
    });
  });

  describe("get_revocations: the documents of GET /revocations/{issuer}", () => {
    const signer = generateSigner();
    let stored: string;
    before(async () => {
      const statement = signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z" });
      stored = dumpCompact(buildRevocationDocument([statement], "2026-01-02T00:00:00Z"));
      await service.app.documentStore.create("revocations", signer.did, Buffer.from(stored));
    });

    test("a stored document comes back as stored, as text and as structured content", async () => {
      const served = await service.app.inject({ method: "GET", url: `/revocations/${signer.did}` });
      assert.equal(served.statusCode, 200);
      assert.equal(served.body, stored);
      const result = await callTool("get_revocations", JSON.stringify({ issuer: signer.did }));
      assert.equal(result.isError, false);
      assert.equal(result.content[0]?.text, stored);
      assert.deepEqual(result.structuredContent, JSON.parse(stored));
    });

    for (const [name, issuer, error] of [
      ["an issuer with no document", generateSigner().did, { error: "no_document" }],
      ["an issuer that is not a did:key", "did:web:example.com", { error: "no_document" }],
      ["a path, not an issuer", "../keys/anything", { error: "no_document" }],
    ] as const) {
      test(`${name} → isError with the endpoint's error body`, async () => {
        const result = await callTool("get_revocations", JSON.stringify({ issuer }));
        assert.equal(result.isError, true);
        assert.deepEqual(result.structuredContent, error);
        assert.equal(result.content[0]?.text, JSON.stringify(error));
      });
    }

    test("in a batch, the stored document lands in its place", async () => {
      const response = await post(
        `[${request("ping", undefined, 1)},${toolCall("get_revocations", JSON.stringify({ issuer: signer.did }), 2)}]`,
      );
      assert.equal(response.statusCode, 200);
      const [ping, revocations] = response.json<RpcResponse[]>();
      assert.deepEqual(ping, { jsonrpc: "2.0", id: 1, result: {} });
      assert.ok(revocations);
      assert.equal(revocations.id, 2);
      const result = revocations.result as unknown as ToolResult;
      assert.deepEqual(result.structuredContent, JSON.parse(stored));
    });
  });
});

describe("tools/call needs keyed access; discovery does not", () => {
  const context = { maxBatch: 50, maxResultBytes: 4 * 1024 * 1024, signer: generateSigner };
  const answer = (body: string, keyedAccess: boolean): McpAnswer =>
    answerMcpRequest(Buffer.from(body), { protocolVersion: null, keyedAccess }, context);

  test("without keyed access, a tools/call is denied before any work", () => {
    assert.deepEqual(answer(toolCall("verify_bundle", '{"bundle":{}}'), false), {
      kind: "denied",
    });
    assert.deepEqual(answer(toolCall("no_such_tool", "{}"), false), { kind: "denied" });
    assert.deepEqual(
      answer(`[${request("ping")},${toolCall("get_revocations", "{}", 2)}]`, false),
      {
        kind: "denied",
      },
    );
  });

  test("without keyed access, discovery and notifications are served", () => {
    assert.deepEqual(answer(request("ping"), false), {
      kind: "reply",
      statusCode: 200,
      batch: false,
      parts: [{ json: '{"jsonrpc":"2.0","id":1,"result":{}}' }],
      toolCall: null,
    });
    const list = answer(request("tools/list"), false);
    assert.equal(list.kind, "reply");
    assert.deepEqual(answer('{"jsonrpc":"2.0","method":"tools/call"}', false), {
      kind: "accepted",
    });
  });
});

describe("the server card", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  for (const [url, mediaType] of [
    ["/.well-known/mcp/server-card.json", "application/json; charset=utf-8"],
    ["/mcp/server-card", "application/mcp-server-card+json; charset=utf-8"],
  ]) {
    test(`GET ${url}: the card, cacheable, open to any origin`, async () => {
      const response = await service.app.inject({ method: "GET", url: url as string });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers["content-type"], mediaType);
      assert.equal(response.headers["cache-control"], "public, max-age=3600");
      assert.equal(response.headers["access-control-allow-origin"], "*");
      const card = response.json<Record<string, unknown>>();
      assert.equal(card.name, "receiptd");
      assert.equal(card.version, "0.1.0");
      assert.ok(String(card.description).length <= 100);
      assert.deepEqual(card.transport, { type: "streamable-http", url: "/mcp" });
      assert.deepEqual(card.capabilities, { tools: { listChanged: false } });
      assert.deepEqual(
        (card.tools as { name: string; inputSchema: { type: string } }[]).map((tool) => [
          tool.name,
          tool.inputSchema.type,
        ]),
        [
          ["verify_bundle", "object"],
          ["verify_anchor", "object"],
          ["get_revocations", "object"],
          ["notarize", "object"],
        ],
      );
      const authentication = card.authentication as { type: string; methods: string[] }[];
      assert.deepEqual(
        authentication.map((entry) => [entry.type, entry.methods]),
        [
          ["none", ["initialize", "notifications/*", "ping", "tools/list"]],
          ["bearer", ["tools/call"]],
          ["api_key", ["tools/call"]],
        ],
      );
      assert.deepEqual(card.remotes, [
        {
          type: "streamable-http",
          url: "http://localhost:80/mcp",
          supportedProtocolVersions: ["2025-06-18", "2025-03-26"],
          headers: [
            {
              name: "Authorization",
              description:
                "Bearer <API key> (svc_ followed by 48 hex digits); needed for tools/call",
              isRequired: false,
              isSecret: true,
            },
          ],
        },
      ]);

      const etag = response.headers.etag as string;
      const again = await service.app.inject({
        method: "GET",
        url: url as string,
        headers: { "if-none-match": etag },
      });
      assert.equal(again.statusCode, 304);
      assert.equal(again.body, "");
    });
  }

  test("the card's tools are tools/list's", async () => {
    const card = (
      await service.app.inject({ method: "GET", url: "/.well-known/mcp/server-card.json" })
    ).json<{ tools: unknown }>();
    const list = (
      await service.app.inject({
        method: "POST",
        url: "/mcp",
        headers: MCP_HEADERS,
        payload: request("tools/list"),
      })
    ).json<RpcResponse>();
    assert.deepEqual(card.tools, list.result?.tools);
  });

  test("CORS preflight for the card", async () => {
    const response = await service.app.inject({
      method: "OPTIONS",
      url: "/.well-known/mcp/server-card.json",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET" },
    });
    assert.equal(response.statusCode, 204);
    assert.equal(response.headers["access-control-allow-origin"], "*");
    assert.equal(response.headers["access-control-allow-headers"], "Content-Type, If-None-Match");
  });
});

describe("the official MCP SDK client over HTTP", () => {
  let service: TestService;
  let url: URL;
  before(async () => {
    service = await startTestService();
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = service.app.server.address() as AddressInfo;
    url = new URL(`http://127.0.0.1:${port}/mcp`);
  });
  after(() => service.close());

  test("connects, lists (with annotations) and calls every tool; GET gets 405; headers are as the SDK sends them", async () => {
    const exchanges: Promise<{
      method: string;
      headers: Headers;
      status: number;
      allow: string | null;
    }>[] = [];
    const recordingFetch = (input: string | URL, init?: RequestInit): Promise<Response> => {
      const response = fetch(input, init);
      exchanges.push(
        response.then((answer) => ({
          method: init?.method ?? "GET",
          headers: new Headers(init?.headers),
          status: answer.status,
          allow: answer.headers.get("allow"),
        })),
      );
      return response;
    };
    const transport = new StreamableHTTPClientTransport(url, {
      fetch: recordingFetch,
      requestInit: { headers: service.authHeaders },
    });
    const client = new Client({ name: "receiptd-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      assert.deepEqual(client.getServerVersion(), {
        name: "receiptd",
        title: "Continuity Receipt verifier",
        version: "0.1.0",
      });
      assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false } });
      assert.equal(transport.sessionId, undefined);
      assert.equal(transport.protocolVersion, "2025-06-18");

      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        ["verify_bundle", "verify_anchor", "get_revocations", "notarize"],
      );
      // Spelled out, not read from the tools table: what an agent deciding whether a call is
      // safe gets, after the SDK's own parsing of the list.
      const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true };
      assert.deepEqual(
        tools.map((tool) => [tool.title, tool.annotations]),
        [
          [
            "Verify a Continuity Receipt bundle",
            { title: "Verify a Continuity Receipt bundle", ...readOnly, openWorldHint: false },
          ],
          [
            "Verify an OpenTimestamps anchor proof",
            { title: "Verify an OpenTimestamps anchor proof", ...readOnly, openWorldHint: false },
          ],
          [
            "Get an issuer's revocation document",
            { title: "Get an issuer's revocation document", ...readOnly, openWorldHint: false },
          ],
          [
            "Notarize context digests",
            {
              title: "Notarize context digests",
              readOnlyHint: false,
              destructiveHint: false,
              idempotentHint: false,
              openWorldHint: false,
            },
          ],
        ],
      );

      const bundle = JSON.parse(corpusBytes("vectors/01_happy_minimal.json").toString("utf8"));
      const verified = await client.callTool({
        name: "verify_bundle",
        arguments: { bundle, receipt: true },
      });
      assert.equal(verified.isError, false);
      const payload = verified.structuredContent as {
        verdict: string;
        verification_receipt: object;
      };
      assert.equal(payload.verdict, "TRUSTED");
      assert.equal(typeof payload.verification_receipt, "object");
      const [text] = verified.content as { type: string; text: string }[];
      assert.deepEqual(JSON.parse(text?.text ?? ""), payload);

      const anchored = await client.callTool({
        name: "verify_anchor",
        arguments: { proof: HELLO_PROOF, digest: HELLO_DIGEST, headers: { 358391: HELLO_HEADER } },
      });
      assert.equal(anchored.isError, false);
      assert.equal((anchored.structuredContent as { status: string }).status, "verified");

      const signer = generateSigner();
      const document = dumpCompact(
        buildRevocationDocument([
          signRevocationStatement(signer, { revokedAt: "2026-03-01T00:00:00Z" }),
        ]),
      );
      await service.app.documentStore.create("revocations", signer.did, Buffer.from(document));
      const revocations = await client.callTool({
        name: "get_revocations",
        arguments: { issuer: signer.did },
      });
      assert.equal(revocations.isError, false);
      assert.deepEqual(revocations.structuredContent, JSON.parse(document));

      const missing = await client.callTool({
        name: "get_revocations",
        arguments: { issuer: generateSigner().did },
      });
      assert.equal(missing.isError, true);
      assert.deepEqual(missing.structuredContent, { error: "no_document" });

      await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), {
        code: -32602,
      });
      await client.ping();
    } finally {
      await client.close();
    }

    const seen = await Promise.all(exchanges);
    const posts = seen.filter((exchange) => exchange.method === "POST");
    for (const exchange of posts) {
      assert.equal(exchange.headers.get("accept"), "application/json, text/event-stream");
      assert.equal(exchange.headers.get("content-type"), "application/json");
    }
    // initialize goes out before a version is negotiated; everything after carries it.
    assert.equal(posts[0]?.headers.get("mcp-protocol-version"), null);
    for (const exchange of posts.slice(1)) {
      assert.equal(exchange.headers.get("mcp-protocol-version"), "2025-06-18");
    }
    assert.deepEqual(
      posts.map((exchange) => exchange.status),
      [200, 202, 200, 200, 200, 200, 200, 200, 200],
    );
    // After notifications/initialized the SDK tries to open an SSE stream: declined with 405.
    const streams = seen.filter((exchange) => exchange.method === "GET");
    assert.deepEqual(
      streams.map((exchange) => [exchange.status, exchange.allow, exchange.headers.get("accept")]),
      [[405, "POST", "text/event-stream"]],
    );
    // Stateless: no session id was handed out, so closing sends no DELETE.
    assert.equal(seen.filter((exchange) => exchange.method === "DELETE").length, 0);
  });
});
