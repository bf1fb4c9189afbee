/**
 * MCP tools declare an `outputSchema` (MCP 2025-06-18 "Structured content"), built from the
 * response schemas of the tools' HTTP endpoints, the same objects. Checked three ways: the
 * declarations themselves (and that OpenAPI shows the endpoints with those schemas), ajv
 * validating every tool's structured content for the corpus bundles and for success and
 * failure results, and the official SDK client, which validates structured content against a
 * declared output schema on every call, over a real socket.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Ajv, type ValidateFunction } from "ajv";
import { findTool, TOOLS, type ToolName } from "../../../../src/service/endpoints/mcp/tools.js";
import { anchorResultSchema } from "../../../../src/service/schemas/anchor.js";
import { errorResponseSchema } from "../../../../src/service/schemas/errors.js";
import { notarizationAnswerSchema } from "../../../../src/service/schemas/notarization.js";
import { revocationDocumentSchema } from "../../../../src/service/schemas/revocation-document.js";
import { verdictPayloadSchema } from "../../../../src/service/schemas/verdict.js";
import { generateSigner } from "../../../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import {
  buildRevocationDocument,
  signRevocationStatement,
} from "../../../../src/verifier/revocations/document.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
} from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

const HELLO_PROOF = corpusBytes("vectors/anchor/hello-world.txt.ots");
const HELLO_DIGEST = "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340";
const HELLO_HEADER = (
  JSON.parse(corpusBytes("vectors/anchor/headers.json").toString("utf8")) as {
    headers: Record<string, string>;
  }
).headers["358391"] as string;
const NOTARY_PROOF = corpusBytes("vectors/anchor/known-and-unknown-notary.txt.ots");

interface ToolResult {
  content: { type: string; text: string }[];
  structuredContent: Record<string, unknown>;
  isError: boolean;
}

/** verify_anchor arguments for results of every status, and for the tool's failures. */
const ANCHOR_CALLS: [string, Record<string, unknown>, boolean][] = [
  [
    "verified",
    {
      proof: HELLO_PROOF.toString("base64"),
      digest: HELLO_DIGEST,
      headers: { 358391: HELLO_HEADER },
    },
    false,
  ],
  ["unverified", { proof: HELLO_PROOF.toString("base64"), digest: HELLO_DIGEST }, false],
  [
    "pending",
    {
      proof: NOTARY_PROOF.toString("base64"),
      digest: NOTARY_PROOF.subarray(33, 65).toString("hex"),
    },
    false,
  ],
  ["digest mismatch", { proof: HELLO_PROOF.toString("base64"), digest: "ab".repeat(32) }, false],
  ["a cut header (AAAA)", { proof: "AAAA", digest: HELLO_DIGEST }, false],
  ["an empty proof", { proof: "", digest: HELLO_DIGEST }, false],
  ["bad digest", { proof: HELLO_PROOF.toString("base64"), digest: "sha512:00" }, false],
  [
    "bad header",
    { proof: HELLO_PROOF.toString("base64"), digest: HELLO_DIGEST, headers: { 1: "00" } },
    false,
  ],
  ["proof not base64 (a tool error)", { proof: "not base64!", digest: HELLO_DIGEST }, true],
  [
    "header not hex (a tool error)",
    { proof: "AAAA", digest: HELLO_DIGEST, headers: { 1: "xyz" } },
    true,
  ],
  [
    "height not canonical (a tool error)",
    { proof: "AAAA", digest: HELLO_DIGEST, headers: { "01": "00" } },
    true,
  ],
];

/** notarize arguments: a full request, and refusals of the library (tool errors). */
const NOTARIZE_CALLS: [string, Record<string, unknown>, boolean][] = [
  [
    "every member",
    {
      context_digest: `sha256:${"ab".repeat(32)}`,
      prompt_hash: "CD".repeat(32),
      action: "summarize",
      model: "m-1",
      agent_id: "agent-7",
      metadata: { run: 3, ok: true, note: null, tag: "x" },
    },
    false,
  ],
  ["no digest", { action: "summarize" }, true],
  ["unsupported fields", { context_digest: "ab".repeat(32), extra: 1, more: 2 }, true],
  ["a float in metadata", { prompt_hash: "ab".repeat(32), metadata: { f: 1.5 } }, true],
];

function corpusBundles(): { file: string; requireAnchor: boolean }[] {
  return BUNDLE_MANIFESTS.flatMap((manifest) =>
    corpusManifest<BundleManifest>(manifest).vectors.map((vector) => ({
      file: `vectors/${vector.file}`,
      requireAnchor: vector.require_anchor,
    })),
  );
}

describe("MCP output schemas", () => {
  let service: TestService;
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validators = new Map<ToolName, ValidateFunction>(
    TOOLS.map((tool) => [tool.name, ajv.compile(tool.outputSchema)]),
  );
  const conforms = (name: ToolName, value: unknown): string | null => {
    const validate = validators.get(name)!;
    return validate(value) ? null : ajv.errorsText(validate.errors);
  };
  const callTool = async (name: ToolName, args: string): Promise<ToolResult> => {
    const response = await service.app.inject({
      method: "POST",
      url: "/mcp",
      headers: MCP_HEADERS,
      payload: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`,
    });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json<{ result?: ToolResult }>();
    assert.ok(body.result, response.body);
    return body.result;
  };

  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  test("every tool declares an object outputSchema made of its endpoint's response schemas", async () => {
    const response = await service.app.inject({
      method: "POST",
      url: "/mcp",
      headers: MCP_HEADERS,
      payload: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    const listed = response.json<{ result: { tools: { name: string; outputSchema: object }[] } }>()
      .result.tools;
    assert.equal(listed.length, 4);
    for (const tool of listed) {
      assert.equal((tool.outputSchema as { type?: string }).type, "object", tool.name);
      assert.deepEqual(
        tool.outputSchema,
        JSON.parse(JSON.stringify(findTool(tool.name)!.outputSchema)),
      );
    }
    // The same objects, not copies: a change to an endpoint's schema changes the tool's.
    assert.equal(findTool("verify_bundle")!.outputSchema, verdictPayloadSchema);
    const anchorBranches = findTool("verify_anchor")!.outputSchema.anyOf as object[];
    assert.equal(anchorBranches[0], anchorResultSchema);
    assert.equal(anchorBranches[1], errorResponseSchema);
    const revocationBranches = findTool("get_revocations")!.outputSchema.anyOf as object[];
    assert.equal(revocationBranches[0], revocationDocumentSchema);
    assert.equal(revocationBranches[1], errorResponseSchema);
    const notarizeBranches = findTool("notarize")!.outputSchema.anyOf as object[];
    assert.equal(notarizeBranches[0], notarizationAnswerSchema);
    assert.equal(notarizeBranches[1], errorResponseSchema);
  });

  test("the endpoints' documented 200 responses are those schemas", async () => {
    const response = await service.app.inject({ method: "GET", url: "/openapi.json" });
    const paths = response.json<{
      paths: Record<
        string,
        Record<
          string,
          { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }
        >
      >;
    }>().paths;
    const documented = (path: string, method: string) =>
      paths[path]?.[method]?.responses["200"]?.content?.["application/json"]?.schema;
    // As @fastify/swagger writes schemas into OpenAPI: `const` becomes a one-value `enum`.
    const plain = (schema: object): unknown =>
      JSON.parse(JSON.stringify(schema), (key, value) =>
        value !== null && typeof value === "object" && "const" in value && key !== "properties"
          ? (({ const: only, ...rest }) => ({ ...rest, enum: [only] }))(value)
          : value,
      );
    assert.deepEqual(documented("/verify-anchor", "post"), plain(anchorResultSchema));
    assert.deepEqual(documented("/revocations/{issuer}", "get"), plain(revocationDocumentSchema));
    const verify = documented("/verify", "post") as { anyOf: unknown[] };
    assert.deepEqual(verify.anyOf[0], plain(verdictPayloadSchema));
  });

  test("verify_bundle: every corpus bundle's structured content conforms, with and without a receipt", async () => {
    const bundles = corpusBundles();
    assert.ok(bundles.length >= 70);
    for (const [index, { file, requireAnchor }] of bundles.entries()) {
      const receipt = index % 2 === 0;
      const args = `{"bundle":${corpusBytes(file)},"require_anchor":${requireAnchor},"receipt":${receipt}}`;
      const result = await callTool("verify_bundle", args);
      assert.equal(result.isError, false, file);
      assert.equal(conforms("verify_bundle", result.structuredContent), null, file);
      if (receipt) {
        const content = result.structuredContent;
        assert.ok("verification_receipt" in content || "verification_receipt_error" in content);
      }
    }
  });

  test("verify_anchor: results of every status and the tool's errors conform", async () => {
    for (const [name, args, isError] of ANCHOR_CALLS) {
      const result = await callTool("verify_anchor", JSON.stringify(args));
      assert.equal(result.isError, isError, name);
      assert.equal(conforms("verify_anchor", result.structuredContent), null, name);
    }
  });

  test("get_revocations: a document and every failure conform", async () => {
    const signer = generateSigner();
    const document = dumpCompact(
      buildRevocationDocument([
        signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z" }),
      ]),
    );
    await service.app.documentStore.create("revocations", signer.did, Buffer.from(document));
    const forged = generateSigner();
    await service.app.documentStore.create("revocations", forged.did, Buffer.from(document));
    for (const [name, issuer, isError] of [
      ["a stored document", signer.did, false],
      ["no document", generateSigner().did, true],
      ["not a did:key", "did:web:example.com", true],
      ["a stored document that is not the issuer's", forged.did, true],
    ] as const) {
      const result = await callTool("get_revocations", JSON.stringify({ issuer }));
      assert.equal(result.isError, isError, name);
      assert.equal(conforms("get_revocations", result.structuredContent), null, name);
    }
  });

  test("notarize: a statement and the library's refusals conform", async () => {
    for (const [name, args, isError] of NOTARIZE_CALLS) {
      const result = await callTool("notarize", JSON.stringify(args));
      assert.equal(result.isError, isError, name);
      assert.equal(conforms("notarize", result.structuredContent), null, name);
    }
    const answer = (await callTool("notarize", JSON.stringify(NOTARIZE_CALLS[0]![1])))
      .structuredContent;
    assert.notEqual(conforms("notarize", { ...answer, notarized: false }), null);
    assert.notEqual(conforms("notarize", { ...answer, digest: "sha256:ABC" }), null);
  });

  test("the schemas are not vacuous: payloads off their shape are refused", async () => {
    const bundle = corpusBytes("vectors/01_happy_minimal.json");
    const verdict = (await callTool("verify_bundle", `{"bundle":${bundle}}`)).structuredContent;
    assert.notEqual(conforms("verify_bundle", { ...verdict, verdict: "MAYBE" }), null);
    const { service: _, ...withoutService } = verdict;
    assert.notEqual(conforms("verify_bundle", withoutService), null);
    const anchor = (await callTool("verify_anchor", JSON.stringify(ANCHOR_CALLS[0]![1])))
      .structuredContent;
    assert.notEqual(conforms("verify_anchor", { ...anchor, status: "confirmed" }), null);
    assert.notEqual(
      conforms("verify_anchor", { ...anchor, attestations: [{ kind: "ethereum" }] }),
      null,
    );
    assert.notEqual(conforms("verify_anchor", { detail: "no error member" }), null);
    assert.notEqual(
      conforms("get_revocations", {
        kind: "continuity-receipt-revocations",
        version: 2,
        statements: [],
      }),
      null,
    );
  });
});

describe("the official MCP SDK client validates structured content against the output schemas", () => {
  let service: TestService;
  let url: URL;
  before(async () => {
    service = await startTestService();
    await service.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = service.app.server.address() as AddressInfo;
    url = new URL(`http://127.0.0.1:${port}/mcp`);
  });
  after(() => service.close());

  test("every tool, its successes and its errors, pass the SDK's validation; a tampered result does not", async () => {
    // A fetch that can alter the server's answers on their way back, to show the SDK checks.
    let tamper: ((body: string) => string) | null = null;
    const tamperingFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
      const response = await fetch(input, init);
      const alter = tamper;
      if (
        alter === null ||
        response.headers.get("content-type")?.startsWith("application/json") !== true
      ) {
        return response;
      }
      return new Response(alter(await response.text()), {
        status: response.status,
        headers: response.headers,
      });
    };
    const transport = new StreamableHTTPClientTransport(url, {
      fetch: tamperingFetch,
      requestInit: { headers: service.authHeaders },
    });
    const client = new Client({ name: "receiptd-output-schema-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => [tool.name, tool.outputSchema?.type]),
        [
          ["verify_bundle", "object"],
          ["verify_anchor", "object"],
          ["get_revocations", "object"],
          ["notarize", "object"],
        ],
      );

      for (const [name, args, isError] of NOTARIZE_CALLS) {
        const result = await client.callTool({ name: "notarize", arguments: args });
        assert.equal(result.isError, isError, name);
      }
      for (const { file, requireAnchor } of corpusBundles().slice(0, 12)) {
        const bundle = JSON.parse(corpusBytes(file).toString("utf8"));
        const result = await client.callTool({
          name: "verify_bundle",
          arguments: { bundle, require_anchor: requireAnchor, receipt: true },
        });
        assert.equal(result.isError, false, file);
      }
      for (const [name, args, isError] of ANCHOR_CALLS) {
        const result = await client.callTool({ name: "verify_anchor", arguments: args });
        assert.equal(result.isError, isError, name);
      }
      const signer = generateSigner();
      const document = dumpCompact(
        buildRevocationDocument([
          signRevocationStatement(signer, { revokedAt: "2026-03-01T00:00:00Z" }),
        ]),
      );
      await service.app.documentStore.create("revocations", signer.did, Buffer.from(document));
      for (const [issuer, isError] of [
        [signer.did, false],
        [generateSigner().did, true],
        ["did:web:example.com", true],
      ] as const) {
        const result = await client.callTool({ name: "get_revocations", arguments: { issuer } });
        assert.equal(result.isError, isError, issuer);
      }

      tamper = (body) => body.replace('"status":"verified"', '"status":"confirmed"');
      await assert.rejects(
        client.callTool({ name: "verify_anchor", arguments: ANCHOR_CALLS[0]![1] }),
        (error: { code?: number; message?: string }) =>
          error.code === -32602 &&
          /does not match the tool's output schema/.test(error.message ?? ""),
      );
    } finally {
      tamper = null;
      await client.close();
    }
  });
});
