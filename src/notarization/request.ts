/**
 * The `POST /notarize` request (issue 28's table is the contract): one or two digests the
 * caller computed, a few bounded claims, and flat metadata. The service never sees the
 * context or the execution behind them, only these values.
 *
 * Lengths are counted in Unicode code points, as Python's `len(str)` counts them (the
 * reference is Python): an emoji is one character, not two UTF-16 units. A lone surrogate
 * also counts as one, and is refused later, when the statement is canonicalised
 * (`invalid_canonical_statement`).
 */
import { isObject, type JsonObject, type JsonValue, PyFloat } from "../verifier/json/value.js";
import { NotarizationError } from "./errors.js";

export const MAX_ACTION_CHARS = 120;
export const MAX_MODEL_CHARS = 100;
export const MAX_AGENT_ID_CHARS = 120;
export const MAX_METADATA_ENTRIES = 16;
export const MAX_METADATA_KEY_CHARS = 64;
export const MAX_METADATA_VALUE_CHARS = 256;

/** The members a request may have, in the statement's order. */
export const REQUEST_FIELDS = [
  "context_digest",
  "prompt_hash",
  "action",
  "model",
  "agent_id",
  "metadata",
] as const;

export type MetadataValue = string | number | boolean | null;

/** A valid request; digests are normalised to `sha256:<64 lower-case hex>`. */
export interface NotarizationRequest {
  context_digest?: string;
  prompt_hash?: string;
  action?: string;
  model?: string;
  agent_id?: string;
  /** Entries in the request's order (canonicalisation sorts them anyway). */
  metadata?: ReadonlyMap<string, MetadataValue>;
}

/** `sha256:` (any case) optional, then 64 hex digits of either case. */
const DIGEST_FORM = /^(?:sha256:)?([0-9a-f]{64})$/i;
const ASCII = /^[\x00-\x7f]*$/;

/** Python's `len`: code points, not UTF-16 units. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** `sha256:<hex>` or bare hex, either case → `sha256:<lower-case hex>`; null when neither. */
export function normalizeDigest(value: string): string | null {
  const match = DIGEST_FORM.exec(value);
  return match === null ? null : `sha256:${(match[1] as string).toLowerCase()}`;
}

function digestMember(
  body: JsonObject,
  name: "context_digest" | "prompt_hash",
): string | undefined {
  const value = body.get(name);
  if (value === undefined || value === null) return undefined;
  const code = name === "context_digest" ? "invalid_context_digest" : "invalid_prompt_hash";
  const digest = typeof value === "string" ? normalizeDigest(value) : null;
  if (digest === null) {
    throw new NotarizationError(code, `${name} must be sha256:<64 hex> or 64 hex digits`, {
      field: name,
    });
  }
  return digest;
}

function boundedString(
  body: JsonObject,
  name: "action" | "model" | "agent_id",
  limit: number,
): string | undefined {
  const value = body.get(name);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || characterCount(value) > limit) {
    throw new NotarizationError(
      "invalid_field",
      `${name} must be a string of at most ${limit} characters`,
      { field: name },
    );
  }
  return value;
}

/** A JSON integer |n| ≤ 2^53 − 1: larger ones parse as bigints, fractions as `PyFloat`. */
function metadataValue(key: string, value: JsonValue): MetadataValue {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "string") {
    if (characterCount(value) <= MAX_METADATA_VALUE_CHARS) return value;
  } else if (typeof value === "number" && Number.isSafeInteger(value)) {
    return value;
  }
  const kind =
    value instanceof PyFloat
      ? "a float"
      : typeof value === "bigint"
        ? "an integer beyond ±(2^53 − 1)"
        : typeof value === "string"
          ? `a string over ${MAX_METADATA_VALUE_CHARS} characters`
          : Array.isArray(value)
            ? "a list"
            : "an object";
  throw new NotarizationError(
    "invalid_metadata_value",
    `metadata[${JSON.stringify(key)}] is ${kind}; values are strings of at most ` +
      `${MAX_METADATA_VALUE_CHARS} characters, safe integers, booleans or null`,
    { field: key },
  );
}

function metadataMember(body: JsonObject): Map<string, MetadataValue> | undefined {
  const value = body.get("metadata");
  if (value === undefined || value === null) return undefined;
  if (!isObject(value) || value.size > MAX_METADATA_ENTRIES) {
    throw new NotarizationError(
      "invalid_metadata",
      `metadata must be an object of at most ${MAX_METADATA_ENTRIES} entries`,
      { field: "metadata" },
    );
  }
  const metadata = new Map<string, MetadataValue>();
  for (const [key, item] of value) {
    if (key === "" || !ASCII.test(key) || key.length > MAX_METADATA_KEY_CHARS) {
      throw new NotarizationError(
        "invalid_metadata_key",
        `metadata keys are non-empty ASCII of at most ${MAX_METADATA_KEY_CHARS} characters`,
        { field: key },
      );
    }
    metadata.set(key, metadataValue(key, item));
  }
  return metadata;
}

/**
 * Validates a strictly parsed request body. Checks run in the table's order and the first
 * failure is thrown as a `NotarizationError`: unknown members (all of them listed), then the
 * digests, the claims, the metadata. A member set to `null` counts as absent, as Python's
 * `body.get(name)` reads it.
 */
export function parseNotarizationRequest(body: JsonValue): NotarizationRequest {
  if (!isObject(body)) {
    throw new NotarizationError("invalid_field", "the request must be a JSON object");
  }
  const known: readonly string[] = REQUEST_FIELDS;
  const unsupported = [...body.keys()].filter((name) => !known.includes(name));
  if (unsupported.length > 0) {
    throw new NotarizationError(
      "unsupported_fields",
      `unsupported fields: ${unsupported.join(", ")}`,
      { fields: unsupported },
    );
  }
  const contextDigest = digestMember(body, "context_digest");
  const promptHash = digestMember(body, "prompt_hash");
  if (contextDigest === undefined && promptHash === undefined) {
    throw new NotarizationError(
      "missing_required_digest",
      "context_digest or prompt_hash is required (sha256:<64 hex> or 64 hex digits)",
    );
  }
  const request: NotarizationRequest = {};
  if (contextDigest !== undefined) request.context_digest = contextDigest;
  if (promptHash !== undefined) request.prompt_hash = promptHash;
  const action = boundedString(body, "action", MAX_ACTION_CHARS);
  if (action !== undefined) request.action = action;
  const model = boundedString(body, "model", MAX_MODEL_CHARS);
  if (model !== undefined) request.model = model;
  const agentId = boundedString(body, "agent_id", MAX_AGENT_ID_CHARS);
  if (agentId !== undefined) request.agent_id = agentId;
  const metadata = metadataMember(body);
  if (metadata !== undefined) request.metadata = metadata;
  return request;
}
