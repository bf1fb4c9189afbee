/**
 * The MCP tool surface (service.md §7): `POST /mcp`, JSON-RPC 2.0 over Streamable HTTP,
 * stateless with JSON responses; `GET`/`DELETE /mcp` → 405 (no server-to-client stream, no
 * sessions); and the server card. Headers are checked here; the body goes, unparsed, to a
 * worker (`worker.ts`) that answers every message, except that reading a stored revocation
 * document — I/O — comes back to this thread.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { dumpCompact } from "../../../verifier/json/dump.js";
import { type Answer, errorAnswer, sendAnswer } from "../../errors.js";
import { clientGone } from "../../http/client-gone.js";
import { ifNoneMatchMatches, strongEtag } from "../../http/stored-document.js";
import { keyedAccess, markKeyedWorkDone } from "../../plugins/access.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { chargeWorkDone } from "../../work-charged.js";
import { revocationDocumentCheckOn } from "../revocations/tasks.js";
import type { McpReplyPart, McpTask } from "./answer.js";
import { answerGetRevocations } from "./get-revocations.js";
import { MCP_PATH, serverCard } from "./server-card.js";
import { mcpTask } from "./tasks.js";
import { acceptsJson, allowedOrigins, isAllowedOrigin, isJsonContentType } from "./transport.js";

const JSON_TYPE = "application/json; charset=utf-8";

const jsonRpcMessage = {
  type: "object",
  required: ["jsonrpc"],
  properties: {
    jsonrpc: { const: "2.0" },
    id: { type: ["string", "integer"], description: "present on requests, never null" },
    method: {
      type: "string",
      description: "`initialize`, `ping`, `tools/list`, `tools/call` or a notification",
    },
    params: { type: "object" },
  },
} as const;

const jsonRpcResponse = {
  type: "object",
  required: ["jsonrpc", "id"],
  properties: {
    jsonrpc: { const: "2.0" },
    id: { type: ["string", "integer", "null"] },
    result: { type: "object", additionalProperties: true },
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "integer" }, message: { type: "string" }, data: {} },
    },
  },
} as const;

const mcpPostSchema = {
  description:
    "MCP over Streamable HTTP, stateless, one JSON response per request. `initialize`, `ping`, " +
    "`tools/list` and notifications are open; `tools/call` (tools `verify_bundle`, " +
    "`verify_anchor`, `get_revocations`) needs an API key. Batches only with protocol 2025-03-26.",
  headers: {
    type: "object",
    properties: {
      "mcp-protocol-version": {
        type: "string",
        description: "the negotiated version; absent means 2025-03-26",
      },
    },
  },
  body: {
    description: "one JSON-RPC 2.0 message, or (protocol 2025-03-26) a non-empty batch of them",
    oneOf: [jsonRpcMessage, { type: "array", minItems: 1, items: jsonRpcMessage }],
  },
  response: {
    200: {
      description: "the response to the request (a result or a JSON-RPC error), or to a batch",
      oneOf: [jsonRpcResponse, { type: "array", items: jsonRpcResponse }],
    },
    202: { description: "only notifications or responses were sent", type: "null" },
    400: {
      ...jsonRpcResponse,
      description:
        "-32700 parse error, -32600 invalid message or refused batch, -32000 unsupported " +
        'MCP-Protocol-Version; -32600 with `data: {error: "result_too_large", limit}` when ' +
        "the verify_bundle verdicts (errors and reasons) and verify_anchor results of the body " +
        "(one message or a whole batch) would take more than `max_result_bytes` (GET /info)",
    },
    // The refusals of `keyedAccess` for a `tools/call` (service.md §9). Open schemas, so that
    // whatever body the access decision carries (an x402 challenge, say) is sent in full.
    401: { type: "object", additionalProperties: true, description: "no key or a bad key" },
    402: { type: "object", additionalProperties: true, description: "an x402 challenge" },
    429: { type: "object", additionalProperties: true, description: "the daily cap is reached" },
    403: { ...errorResponseSchema, description: "`origin_not_allowed`: a foreign Origin" },
    406: { ...errorResponseSchema, description: "`not_acceptable`: Accept excludes JSON" },
    415: {
      ...errorResponseSchema,
      description: "`unsupported_media_type`: Content-Type is not application/json",
    },
    ...commonErrorResponses,
  },
} as const;

const methodNotAllowedSchema = {
  description:
    "Not offered: this stateless server opens no server-to-client stream and keeps no " +
    "sessions. Answered 405 with `Allow: POST`.",
  response: {
    405: { ...errorResponseSchema, description: "`method_not_allowed`" },
  },
} as const;

const serverCardSchema = {
  description:
    "The MCP server card: name, version, transport, capabilities, tools and authentication " +
    "(cacheable, `ETag`, CORS open).",
  response: {
    200: { type: "object", additionalProperties: true },
    304: { description: "the client's copy (named by `If-None-Match`) is current", type: "null" },
  },
} as const;

const preflightSchema = {
  description: "CORS preflight for the server card",
  response: { 204: { description: "GET allowed from any origin", type: "null" } },
} as const;

/** SEP-2127's location and media type; the contract's location serves plain JSON. */
const CARD_LOCATIONS = [
  { url: "/.well-known/mcp/server-card.json", type: JSON_TYPE },
  { url: `${MCP_PATH}/server-card`, type: "application/mcp-server-card+json; charset=utf-8" },
] as const;

/** A header field as one string (Node joins most repeated fields; a few arrive as arrays). */
function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * Why the transport refuses the request (service.md §7), before its body is read; null when
 * it does not. These are HTTP refusals, not JSON-RPC errors: no message was read yet.
 */
function transportRefusal(request: FastifyRequest, origins: ReadonlySet<string>): Answer | null {
  if (!isAllowedOrigin(headerValue(request, "origin"), origins)) {
    return errorAnswer("origin_not_allowed", {
      detail: "browser requests are accepted only from the service's configured public origins",
    });
  }
  if (!acceptsJson(headerValue(request, "accept"))) {
    return errorAnswer("not_acceptable", { detail: "Accept must allow application/json" });
  }
  if (!isJsonContentType(headerValue(request, "content-type"))) {
    return errorAnswer("unsupported_media_type", {
      detail: "Content-Type must be application/json",
    });
  }
  return null;
}

function sendServerCard(
  request: FastifyRequest,
  reply: FastifyReply,
  mediaType: string,
): FastifyReply {
  const bytes = Buffer.from(dumpCompact(serverCard(`${request.protocol}://${request.host}`)));
  const etag = strongEtag(bytes);
  reply
    .header("etag", etag)
    .header("cache-control", "public, max-age=3600")
    .header("access-control-allow-origin", "*")
    .header("access-control-expose-headers", "ETag");
  if (ifNoneMatchMatches(request.headers["if-none-match"], etag)) return reply.code(304).send();
  return reply.code(200).type(mediaType).send(bytes);
}

export async function mcpRoutes(app: FastifyInstance) {
  const { payments, mcpAllowedOrigins } = app.serviceConfig;
  const origins = allowedOrigins(payments.publicBaseUrl, mcpAllowedOrigins);
  const checkRevocationDocument = revocationDocumentCheckOn(app.cpuPool);
  const replyPart = (part: McpReplyPart): string | Promise<string> =>
    "json" in part
      ? part.json
      : answerGetRevocations(app.documentStore, checkRevocationDocument, part.revocations);

  app.post(
    MCP_PATH,
    { schema: mcpPostSchema, config: { access: "mixed" } },
    async (request, reply) => {
      const refusal = transportRefusal(request, origins);
      if (refusal !== null) return sendAnswer(reply, refusal);
      // Decided before the body is read, which only the worker does; it is applied only if
      // the body holds a `tools/call`, so discovery stays keyless.
      const access = keyedAccess(request);
      const body = transferableBody(request.body);
      const task: McpTask = {
        body,
        protocolVersion: headerValue(request, "mcp-protocol-version") ?? null,
        keyedAccess: access.granted,
      };
      const answer = await app.cpuPool.run(mcpTask, task, [body], {
        clientGone: clientGone(reply),
      });
      if (answer.kind === "denied") {
        if (access.granted) throw new Error("the MCP worker denied a granted request");
        const { refusal } = access;
        return sendAnswer(reply.headers(refusal.headers), refusal);
      }
      if (answer.kind === "accepted") return reply.code(202).send();
      if (answer.toolCall !== null) markKeyedWorkDone(request, answer.toolCall);
      if (answer.charged) chargeWorkDone(reply);
      const parts = await Promise.all(answer.parts.map(replyPart));
      return reply
        .code(answer.statusCode)
        .type(JSON_TYPE)
        .send(answer.batch ? `[${parts.join(",")}]` : parts[0]);
    },
  );

  app.route({
    method: ["GET", "DELETE"],
    url: MCP_PATH,
    schema: methodNotAllowedSchema,
    config: { access: "keyless" },
    handler: async (request, reply) =>
      sendAnswer(
        reply.header("allow", "POST"),
        errorAnswer("method_not_allowed", {
          detail: `${request.method} is not offered: this server is stateless; use POST`,
        }),
      ),
  });

  for (const location of CARD_LOCATIONS) {
    app.get(
      location.url,
      { schema: serverCardSchema, config: { access: "keyless", cors: false } },
      async (request, reply) => sendServerCard(request, reply, location.type),
    );
    app.options(
      location.url,
      { schema: preflightSchema, config: { access: "keyless", cors: false } },
      async (_request, reply) =>
        reply
          .code(204)
          .header("access-control-allow-origin", "*")
          .header("access-control-allow-methods", "GET")
          .header("access-control-allow-headers", "Content-Type, If-None-Match")
          .header("access-control-max-age", "86400")
          .send(),
    );
  }
}
