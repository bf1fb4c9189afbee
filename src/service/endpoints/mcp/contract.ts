/**
 * The contract of the MCP endpoint (service.md §7): `POST /mcp`, the 405s of `GET` and
 * `DELETE /mcp`, the server card at its two locations; their schemas, and the worker task of
 * `POST /mcp`. The route and `worker.ts` share it.
 */
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { McpAnswer, McpTask } from "./answer.js";

export const mcpTask = defineTask<McpTask, McpAnswer>(import.meta.url);

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
    "`verify_anchor`, `get_revocations`, `notarize`) needs an API key. Batches only with protocol 2025-03-26.",
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

export const mcpOperation = defineOperation({
  method: "POST",
  url: "/mcp",
  operationId: "mcp",
  summary: "Send MCP JSON-RPC messages",
  tag: "mcp",
  access: "mixed",
  refusals: [
    "result_too_large",
    "origin_not_allowed",
    "not_acceptable",
    "unsupported_media_type",
    "cost_exceeds_limit",
    "cost_exceeds_cap",
  ],
  schema: mcpPostSchema,
});

export const mcpOpenStreamOperation = defineOperation({
  method: "GET",
  url: "/mcp",
  operationId: "mcpOpenStream",
  summary: "Not offered (405)",
  tag: "mcp",
  access: "keyless",
  refusals: ["method_not_allowed"],
  schema: methodNotAllowedSchema,
});

export const mcpEndSessionOperation = defineOperation({
  ...mcpOpenStreamOperation,
  method: "DELETE",
  operationId: "mcpEndSession",
});

export const getMcpServerCardOperation = defineOperation({
  method: "GET",
  url: "/.well-known/mcp/server-card.json",
  operationId: "getMcpServerCard",
  summary: "Read the MCP server card",
  tag: "mcp",
  access: "keyless",
  refusals: [],
  schema: serverCardSchema,
});

export const preflightMcpServerCardOperation = defineOperation({
  method: "OPTIONS",
  url: "/.well-known/mcp/server-card.json",
  operationId: "preflightMcpServerCard",
  summary: "CORS preflight of the server card",
  tag: "mcp",
  access: "keyless",
  refusals: [],
  schema: preflightSchema,
});

/** SEP-2127's location of the same card. */
export const getMcpServerCardSep2127Operation = defineOperation({
  ...getMcpServerCardOperation,
  url: "/mcp/server-card",
  operationId: "getMcpServerCardSep2127",
  summary: "Read the MCP server card (SEP-2127 location)",
});

export const preflightMcpServerCardSep2127Operation = defineOperation({
  ...preflightMcpServerCardOperation,
  url: "/mcp/server-card",
  operationId: "preflightMcpServerCardSep2127",
  summary: "CORS preflight of the server card (SEP-2127 location)",
});
