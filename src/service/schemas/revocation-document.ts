/**
 * A revocation document as the service serves it (verifier.md §7, service.md §3): the body
 * of `GET /revocations/{issuer}` and, the same bytes, the MCP tool `get_revocations`'s
 * structured content.
 */
export const revocationDocumentSchema = {
  description: "the stored document, byte for byte, with a strong `ETag`",
  type: "object",
  required: ["kind", "version", "statements"],
  properties: {
    kind: { type: "string", const: "continuity-receipt-revocations" },
    version: { type: "integer", const: 1 },
    issued_at: {
      type: "string",
      description: "when the document last changed (informational)",
    },
    statements: {
      type: "array",
      items: {
        type: "object",
        required: ["key", "revoked_at", "sig"],
        properties: {
          key: { type: "string" },
          revoked_at: { type: "string" },
          reason: {},
          sig: { type: "object", additionalProperties: true },
        },
        additionalProperties: true,
      },
    },
  },
  additionalProperties: true,
} as const;
