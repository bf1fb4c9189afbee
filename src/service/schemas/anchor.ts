/**
 * The OpenTimestamps request and result schemas (service.md §1 `POST /verify-anchor`, §2
 * `POST /anchors`): what the routes document and the workers check against, and what MCP's
 * `verify_anchor` declares as its output. Plain data, read by both threads.
 */

/** Standard base64 (RFC 4648 §4) with its padding. */
export const BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";
export const HEX_PATTERN = "^(?:[0-9a-fA-F]{2})*$";
/** Decimal without leading zeros, so two keys can never name the same height. */
export const HEIGHT_KEY_PATTERN = "^(?:0|[1-9][0-9]*)$";

export const proofSchema = {
  type: "string",
  pattern: BASE64_PATTERN,
  description: "a detached OpenTimestamps proof (.ots), standard base64 with padding",
} as const;

export const headerSchema = {
  type: "string",
  pattern: HEX_PATTERN,
  description: "an 80-byte Bitcoin block header, 160 hex characters",
} as const;

export const verifyAnchorBodySchema = {
  type: "object",
  description:
    "the proof, the digest it should commit to, and optionally block headers: either `headers` " +
    "(by height) or one `header` with its `height`",
  required: ["proof", "digest"],
  additionalProperties: false,
  properties: {
    proof: proofSchema,
    digest: {
      type: "string",
      description: "`sha256:<hex>` or `<hex>`; a string the verifier cannot use is `bad_digest`",
    },
    headers: {
      type: "object",
      description: "block headers keyed by decimal block height",
      propertyNames: { pattern: HEIGHT_KEY_PATTERN },
      additionalProperties: headerSchema,
    },
    header: headerSchema,
    height: { type: "integer", minimum: 0, description: "the block height of `header`" },
  },
} as const;

/** An attestation as AnchorResult and stored anchor documents list it (verifier.md §8.2). */
export const attestationSchema = {
  type: "object",
  required: ["kind"],
  properties: {
    kind: { type: "string", enum: ["pending", "bitcoin", "litecoin", "unknown"] },
    value: {
      type: ["string", "integer"],
      description: "calendar URI (pending) or block height (bitcoin, litecoin)",
    },
    tag: { type: "string", description: "hex attestation tag (unknown)" },
    payload: { type: "string", description: "hex payload (unknown)" },
  },
} as const;

export const anchorResultSchema = {
  description:
    "the AnchorResult of verifier.md §8.4 plus `service`; only merkle-root equality with the " +
    "supplied headers is checked (no proof-of-work, no header chain)",
  type: "object",
  required: ["status", "code", "detail", "file_digest", "attestations", "service"],
  properties: {
    status: { type: "string", enum: ["verified", "unverified", "mismatch", "invalid"] },
    code: { type: "string" },
    detail: { type: "string" },
    file_digest: {
      type: "string",
      description: "`<hash op>:<hex>`, empty if the proof did not parse",
    },
    attestations: { type: "array", items: attestationSchema },
    confirmed: {
      type: "object",
      description: "present only when verified",
      properties: {
        block_height: { type: "integer" },
        merkle_root: { type: "string" },
        header_time: { type: "integer" },
      },
    },
    service: { type: "string" },
  },
} as const;
