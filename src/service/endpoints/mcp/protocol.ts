/**
 * The MCP surface's fixed facts (service.md §7, protocols.md §3): protocol versions, JSON-RPC
 * error codes, and what `initialize` and the server card say about the server. Shared by the
 * main thread (routes, server card) and the worker that answers messages.
 */
import { VERIFIER_VERSION } from "../../../verifier/version.js";

/**
 * The Streamable HTTP revisions served, newest first. 2025-11-25 is not claimed: it turns
 * argument validation failures into tool results, where service.md §7 answers -32602.
 * Clients that ask for it are offered 2025-06-18, which the SDKs accept.
 */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-06-18", "2025-03-26"] as const;

export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0];

/** What a request without `MCP-Protocol-Version` speaks (protocols.md §3.1). */
export const HEADERLESS_PROTOCOL_VERSION = "2025-03-26";

/** The one revision that allows JSON-RPC batches (2025-06-18 removed them). */
export const BATCHING_PROTOCOL_VERSION = "2025-03-26";

export function isSupportedProtocolVersion(version: string): boolean {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version);
}

export const JSON_RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  /** Implementation-defined: the request was refused by the transport (as the SDK does). */
  transportRefusal: -32000,
} as const;

export const SERVER_INFO = {
  name: "receiptd",
  title: "Continuity Receipt verifier",
  version: VERIFIER_VERSION,
} as const;

/** Stateless: no server-to-client messages, so nothing can announce a changed list. */
export const SERVER_CAPABILITIES = { tools: { listChanged: false } } as const;

export const SERVER_INSTRUCTIONS =
  "Verifies Continuity Receipt bundles (signed, hash-chained records of AI-agent tasks, " +
  "spec 0.1–0.6) with the same verdicts as POST /verify, checks OpenTimestamps anchor proofs " +
  "against supplied block headers, serves issuers' revocation documents, and notarizes " +
  "caller-supplied context digests as POST /notarize does. Discovery is " +
  "open; tools/call needs an API key (Authorization: Bearer or X-SVC-Key).";
