/**
 * MCP `notarize` (issue 28) over a real socket with the official SDK client, in both modes
 * (documents in files, and in PostgreSQL): the statement is signed by the service key and
 * verifies offline, its document is stored under its digest, the library's refusals come back
 * as tool errors with POST /notarize's codes, and a store that cannot be reached is the tool
 * error `store_unavailable`. Also: the declared input schema accepts exactly what the library
 * accepts, at every boundary of issue 28's table (null aside, which the library reads as
 * absent).
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Ajv } from "ajv";
import {
  issueNotarization,
  NOTARIZATION_NOTE,
  NotarizationError,
  parseNotarizationRequest,
  readNotarization,
  verifyNotarization,
} from "../../../../src/notarization/index.js";
import type { ConfigOverrides } from "../../../../src/service/config.js";
import { notarizationRequestSchema } from "../../../../src/service/schemas/notarization.js";
import { generateSigner } from "../../../../src/verifier/crypto/ed25519.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import { isObject } from "../../../../src/verifier/json/value.js";
import { dropSchema, privateSchema, TcpProxy } from "../../../support/pg.js";
import { startTestService, type TestService } from "../../support/service.js";

interface NotarizeAnswer {
  notarized: true;
  digest: string;
  receipt: Record<string, unknown>;
  service: string;
  lookup_url: string;
}

const REQUEST = {
  context_digest: `SHA256:${"AB".repeat(32)}`,
  prompt_hash: "cd".repeat(32),
  action: "summarize",
  model: "m-1",
  agent_id: "agent-7",
  metadata: { run: 3, ok: true, note: null, tag: "x" },
};

/** The library's refusal code for a request body (null when it signs it). */
function libraryCode(body: string): string | null {
  try {
    issueNotarization(parseNotarizationRequest(parseJson(body)), generateSigner());
    return null;
  } catch (error) {
    if (error instanceof NotarizationError) return error.code;
    throw error;
  }
}

interface Mode {
  name: string;
  start(): Promise<{ service: TestService; proxy?: TcpProxy; cleanup(): Promise<void> }>;
}

const MODES: Mode[] = [
  {
    name: "embedded (files)",
    start: async () => {
      const service = await startTestService();
      return { service, cleanup: () => service.close() };
    },
  },
  {
    name: "distributed (PostgreSQL)",
    start: async () => {
      const schema = privateSchema();
      const proxy = new TcpProxy();
      await proxy.listen();
      const overrides: ConfigOverrides = { databaseUrl: proxy.url, databaseSchema: schema };
      const service = await startTestService(overrides);
      return {
        service,
        proxy,
        cleanup: async () => {
          await proxy.cut();
          await service.close();
          await dropSchema(schema);
        },
      };
    },
  },
];

for (const mode of MODES) {
  describe(`MCP notarize with the official SDK client, ${mode.name}`, () => {
    let started: Awaited<ReturnType<Mode["start"]>>;
    let client: Client;
    before(async () => {
      started = await mode.start();
      const { app, authHeaders } = started.service;
      await app.listen({ host: "127.0.0.1", port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
        requestInit: { headers: authHeaders },
      });
      client = new Client({ name: "receiptd-notarize-test", version: "1.0.0" });
      await client.connect(transport);
      // The SDK validates structured content only for tools it has listed.
      await client.listTools();
    });
    after(async () => {
      await client.close();
      await started.cleanup();
    });

    test("the statement is signed by the service key, verifies, and is stored under its digest", async () => {
      const { app } = started.service;
      const result = await client.callTool({ name: "notarize", arguments: REQUEST });
      assert.equal(result.isError, false);
      const answer = result.structuredContent as unknown as NotarizeAnswer;
      const [text] = result.content as { type: string; text: string }[];
      assert.deepEqual(JSON.parse(text?.text ?? ""), answer);
      assert.equal(answer.notarized, true);
      assert.equal(answer.service, "continuity-receipt-verify");
      assert.match(answer.digest, /^sha256:[0-9a-f]{64}$/);
      assert.equal(answer.lookup_url, `/notarize/${answer.digest.slice(7)}`);

      const serviceKey = app.serviceIdentity.signer().did;
      const statement = parseJson(JSON.stringify(answer.receipt));
      const check = verifyNotarization(statement, {
        trustedIssuers: [serviceKey],
        digest: answer.digest,
      });
      assert.deepEqual(check.errors, []);
      assert.equal(check.valid, true);
      assert.equal(check.issuer, serviceKey);
      assert.equal(check.digest_match, true);
      // The request's digests in their normal form, the claims as given.
      assert.equal(answer.receipt.context_digest, `sha256:${"ab".repeat(32)}`);
      assert.equal(answer.receipt.prompt_hash, `sha256:${"cd".repeat(32)}`);
      assert.deepEqual(answer.receipt.metadata, REQUEST.metadata);

      // Read from the store directly: GET /notarize/{digest} is another endpoint's.
      const stored = parseJson(await readNotarization(app.documentStore, answer.digest));
      assert.ok(isObject(stored));
      assert.equal(stored.get("notarization_digest"), answer.digest);
      assert.equal(stored.get("service"), "continuity-receipt-verify");
      assert.equal(stored.get("note"), NOTARIZATION_NOTE);
      assert.deepEqual(JSON.parse(JSON.stringify(answer.receipt)), answer.receipt);
      const storedStatement = stored.get("notarization");
      assert.equal(
        verifyNotarization(storedStatement ?? null, {
          trustedIssuers: [serviceKey],
          digest: answer.digest,
        }).valid,
        true,
      );
    });

    const refusals: [string, Record<string, unknown>, Record<string, unknown>][] = [
      [
        "no digest",
        { action: "x" },
        {
          error: "missing_required_digest",
          detail: "context_digest or prompt_hash is required (sha256:<64 hex> or 64 hex digits)",
        },
      ],
      [
        "unknown members, all listed",
        { context_digest: "ab".repeat(32), extra: 1, more: true },
        {
          error: "unsupported_fields",
          detail: "unsupported fields: extra, more",
          fields: ["extra", "more"],
        },
      ],
      [
        "a bad context digest",
        { context_digest: "sha512:00" },
        { error: "invalid_context_digest" },
      ],
      ["a bad prompt hash", { prompt_hash: 5 }, { error: "invalid_prompt_hash" }],
      [
        "action of 121 characters",
        { prompt_hash: "ab".repeat(32), action: "a".repeat(121) },
        { error: "invalid_field" },
      ],
      [
        "17 metadata entries",
        {
          prompt_hash: "ab".repeat(32),
          metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i])),
        },
        { error: "invalid_metadata" },
      ],
      [
        "a non-ASCII metadata key",
        { prompt_hash: "ab".repeat(32), metadata: { clé: 1 } },
        { error: "invalid_metadata_key" },
      ],
      [
        "2^53 as a metadata value",
        { prompt_hash: "ab".repeat(32), metadata: { n: 2 ** 53 } },
        { error: "invalid_metadata_value" },
      ],
      [
        "a lone surrogate",
        { prompt_hash: "ab".repeat(32), action: "\ud800" },
        { error: "invalid_canonical_statement" },
      ],
    ];
    for (const [name, args, expected] of refusals) {
      test(`${name} → a tool error with the library's code (${String(expected.error)})`, async () => {
        const result = await client.callTool({ name: "notarize", arguments: args });
        assert.equal(result.isError, true);
        const refusal = result.structuredContent as Record<string, unknown>;
        assert.equal(refusal.error, expected.error);
        assert.equal(typeof refusal.detail, "string");
        for (const [member, value] of Object.entries(expected)) {
          assert.deepEqual(refusal[member], value, member);
        }
        // The code the library gives POST /notarize for the same body.
        assert.equal(libraryCode(JSON.stringify(args)), expected.error);
      });
    }

    if (mode.name.startsWith("distributed")) {
      test("a store that cannot be reached → the tool error store_unavailable; then it works", async () => {
        const proxy = started.proxy!;
        await proxy.cut();
        try {
          const result = await client.callTool({ name: "notarize", arguments: REQUEST });
          assert.equal(result.isError, true);
          assert.deepEqual(result.structuredContent, {
            error: "store_unavailable",
            detail: "the notarization store cannot be written right now, retry",
          });
        } finally {
          await proxy.restore();
        }
        const retried = await client.callTool({ name: "notarize", arguments: REQUEST });
        assert.equal(retried.isError, false);
      });
    }
  });
}

describe("notarize's input schema describes what the library decides", () => {
  const validate = new Ajv({ strict: false }).compile(notarizationRequestSchema);
  const hex = "ab".repeat(32);
  const cases: Record<string, unknown>[] = [
    { context_digest: hex },
    { prompt_hash: `sha256:${hex}` },
    { context_digest: `ShA256:${hex.toUpperCase()}` },
    { context_digest: `sha256:${hex}0` },
    { context_digest: "" },
    {},
    { action: "x" },
    { context_digest: hex, extra: 1 },
    { context_digest: hex, action: "a".repeat(120) },
    { context_digest: hex, action: "a".repeat(121) },
    { context_digest: hex, action: "😀".repeat(120) },
    { context_digest: hex, model: "m".repeat(100) },
    { context_digest: hex, model: "m".repeat(101) },
    { context_digest: hex, agent_id: "g".repeat(120) },
    { context_digest: hex, agent_id: "g".repeat(121) },
    { context_digest: hex, action: 5 },
    { context_digest: hex, metadata: [] },
    { context_digest: hex, metadata: "x" },
    ...[16, 17].map((size) => ({
      context_digest: hex,
      metadata: Object.fromEntries(Array.from({ length: size }, (_, i) => [`k${i}`, i])),
    })),
    { context_digest: hex, metadata: { "": 1 } },
    { context_digest: hex, metadata: { ["k".repeat(64)]: 1 } },
    { context_digest: hex, metadata: { ["k".repeat(65)]: 1 } },
    { context_digest: hex, metadata: { ключ: 1 } },
    { context_digest: hex, metadata: { "\u007f": 1 } },
    { context_digest: hex, metadata: { v: "v".repeat(256) } },
    { context_digest: hex, metadata: { v: "v".repeat(257) } },
    { context_digest: hex, metadata: { v: 2 ** 53 - 1, w: -(2 ** 53 - 1) } },
    { context_digest: hex, metadata: { v: 2 ** 53 } },
    { context_digest: hex, metadata: { v: -(2 ** 53) } },
    { context_digest: hex, metadata: { v: 1.5 } },
    { context_digest: hex, metadata: { v: true, w: null } },
    { context_digest: hex, metadata: { v: [] } },
    { context_digest: hex, metadata: { v: {} } },
  ];

  for (const args of cases) {
    const text = JSON.stringify(args);
    test(`${text.length > 80 ? `${text.slice(0, 77)}...` : text}`, () => {
      const libraryAccepts = libraryCode(text) === null;
      // "At least one digest" is not in the schema (agents' hosts refuse a top-level anyOf);
      // the library alone says `missing_required_digest`.
      const hasDigest = "context_digest" in args || "prompt_hash" in args;
      const schemaAccepts = validate(args) && hasDigest;
      assert.equal(schemaAccepts, libraryAccepts);
    });
  }
});
