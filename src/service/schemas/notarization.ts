/**
 * The `POST /notarize` request and answer schemas (issue 28): what MCP's `notarize` declares
 * as its input and output, and what the route can document. Plain data, read by both threads.
 *
 * The request schema describes; `parseNotarizationRequest` decides. Its limits come from the
 * library's constants, so the two cannot drift apart, and a request the schema accepts is one
 * the library accepts (test/service/endpoints/mcp/notarize.test.ts checks every boundary of
 * issue 28's table). The one difference: the library reads a `null` member as absent.
 */
import {
  MAX_ACTION_CHARS,
  MAX_AGENT_ID_CHARS,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_VALUE_CHARS,
  MAX_MODEL_CHARS,
} from "../../notarization/index.js";

/** `sha256:` in any case, optional, then 64 hex digits of either case. */
const DIGEST_INPUT_PATTERN = "^(?:[sS][hH][aA]256:)?[0-9a-fA-F]{64}$";
/** What the statement and the answer carry: the normal form. */
const DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$";

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function digestInput(role: string) {
  return {
    type: "string",
    pattern: DIGEST_INPUT_PATTERN,
    description: `${role}: sha256:<64 hex> or 64 hex, either case (stored as sha256:<lower-case hex>)`,
  } as const;
}

export const notarizationRequestSchema = {
  type: "object",
  description:
    "At least one of context_digest and prompt_hash is required (missing_required_digest). " +
    "Any other member is refused (unsupported_fields).",
  properties: {
    context_digest: digestInput("the SHA-256 of the context"),
    prompt_hash: digestInput("the SHA-256 of the prompt"),
    action: { type: "string", maxLength: MAX_ACTION_CHARS, description: "what was done" },
    model: { type: "string", maxLength: MAX_MODEL_CHARS, description: "the model used" },
    agent_id: { type: "string", maxLength: MAX_AGENT_ID_CHARS, description: "the agent" },
    metadata: {
      type: "object",
      description:
        "flat metadata: keys non-empty ASCII; values strings, safe integers, booleans or null",
      maxProperties: MAX_METADATA_ENTRIES,
      propertyNames: {
        type: "string",
        minLength: 1,
        maxLength: MAX_METADATA_KEY_CHARS,
        pattern: "^[\\u0000-\\u007f]*$",
      },
      additionalProperties: {
        anyOf: [
          { type: "string", maxLength: MAX_METADATA_VALUE_CHARS },
          { type: "integer", minimum: -MAX_SAFE, maximum: MAX_SAFE },
          { type: "boolean" },
          { type: "null" },
        ],
      },
    },
  },
  required: [],
  additionalProperties: false,
} as const;

const signatureSchema = {
  type: "object",
  required: ["alg", "key", "value"],
  properties: {
    alg: { const: "ed25519" },
    key: { type: "string", description: "the issuer's did:key" },
    value: { type: "string", description: "Ed25519 signature, base64url without padding" },
  },
} as const;

/** The signed `wm.context-notarization` statement (version 1). */
export const notarizationStatementSchema = {
  type: "object",
  description:
    "signed Ed25519 over the JCS canonical bytes of the statement without `sig`; optional " +
    "members are present only when the request had them",
  required: ["kind", "version", "issued_at", "issuer", "sig"],
  properties: {
    kind: { const: "wm.context-notarization" },
    version: { const: 1 },
    issued_at: { type: "string", description: "UTC, whole seconds (…Z)" },
    issuer: { type: "string", description: "the service's Ed25519 did:key" },
    context_digest: { type: "string", pattern: DIGEST_PATTERN },
    prompt_hash: { type: "string", pattern: DIGEST_PATTERN },
    action: { type: "string" },
    model: { type: "string" },
    agent_id: { type: "string" },
    metadata: { type: "object" },
    sig: signatureSchema,
  },
} as const;

/** `POST /notarize`'s 200 body. */
export const notarizationAnswerSchema = {
  type: "object",
  required: ["notarized", "digest", "receipt", "service", "lookup_url"],
  properties: {
    notarized: { const: true },
    digest: {
      type: "string",
      pattern: DIGEST_PATTERN,
      description: "SHA-256 of the statement's canonical bytes without `sig`",
    },
    receipt: notarizationStatementSchema,
    service: { type: "string" },
    lookup_url: { type: "string", description: "/notarize/<64 hex>: where it is served" },
  },
} as const;
