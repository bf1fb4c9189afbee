/**
 * `GET /receipts/{tx}` (service.md §4): the stored settlement receipt of a transaction, served
 * as the bytes that were stored, so its ETag never changes.
 */
import type { FastifyInstance } from "fastify";
import {
  INVALID_TRANSACTION_HASH_DETAIL,
  SETTLEMENT_RECEIPT_KIND,
  SETTLEMENT_RECEIPT_VERSION,
  TRANSACTION_HASH_PATTERN,
  transactionId,
  USER_AGENT_FAMILIES,
} from "../../../payments/settlement-receipt.js";
import { errorAnswer, sendAnswer } from "../../errors.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { fromStore } from "../../library-errors.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";

const READ_FAILED = "the settlement store cannot be read right now, retry";

export const receiptDigestSchema = {
  type: "string",
  pattern: "^sha256:[0-9a-f]{64}$",
  description: "`sha256:` + hex of the JCS bytes of the receipt without `sig` (what was signed)",
} as const;

/** The signed settlement receipt, members in the order they are stored. */
export const settlementReceiptSchema = {
  type: "object",
  description:
    "content-free and signed: Ed25519 by `issuer` over the JCS bytes of the receipt without `sig`",
  required: [
    "kind",
    "version",
    "issued_at",
    "network",
    "asset",
    "amount",
    "pay_to",
    "tx",
    "path",
    "issuer",
    "sig",
  ],
  additionalProperties: false,
  properties: {
    kind: { type: "string", const: SETTLEMENT_RECEIPT_KIND },
    version: { type: "integer", const: SETTLEMENT_RECEIPT_VERSION },
    issued_at: { type: "string", format: "date-time" },
    network: { type: "string" },
    asset: { type: "string" },
    amount: { type: "string", description: "atomic units" },
    pay_to: { type: "string" },
    tx: { type: "string", description: "`0x` + 64 lower-case hex" },
    path: { type: "string", description: "the paid route" },
    rpc: { type: "string", description: "the JSON-RPC method, for a payment over MCP" },
    tool: { type: "string", description: "the MCP tool, for a payment over MCP" },
    ua_family: {
      type: "string",
      enum: [...USER_AGENT_FAMILIES],
      description: "the paying client's User-Agent family, when it is known",
    },
    uah: {
      type: "string",
      pattern: "^[0-9a-f]{12}$",
      description: "the first 12 hex digits of the SHA-256 of the raw User-Agent",
    },
    issuer: { type: "string", description: "the service's did:key when it signed" },
    sig: {
      type: "object",
      required: ["alg", "key", "value"],
      additionalProperties: false,
      properties: {
        alg: { type: "string", const: "ed25519" },
        key: { type: "string", description: "the issuer's did:key" },
        value: { type: "string", description: "base64url, no padding" },
      },
    },
  },
} as const;

const txParam = {
  type: "string",
  pattern: TRANSACTION_HASH_PATTERN,
  description: "`0x` and 64 hex digits, either case",
} as const;

const getReceiptSchema = {
  description: "The stored settlement receipt of a transaction",
  params: { type: "object", required: ["tx"], properties: { tx: txParam } },
  response: {
    200: {
      description: "the stored document, byte for byte as stored (strong ETag)",
      type: "object",
      required: ["receipt", "receipt_digest", "stored_at"],
      properties: {
        receipt: settlementReceiptSchema,
        receipt_digest: receiptDigestSchema,
        stored_at: { type: "string", format: "date-time" },
      },
    },
    304: { description: "the client's copy (If-None-Match) is current", type: "null" },
    400: { ...errorResponseSchema, description: "invalid_transaction_hash" },
    404: { ...errorResponseSchema, description: "receipt_not_found" },
    ...commonErrorResponses,
  },
} as const;

export async function receiptRoutes(app: FastifyInstance) {
  app.get<{ Params: { tx: string } }>(
    "/receipts/:tx",
    { schema: getReceiptSchema, attachValidation: true, config: { access: "keyless" } },
    async (request, reply) => {
      const id = request.validationError ? null : transactionId(request.params.tx);
      if (id === null) {
        const detail = INVALID_TRANSACTION_HASH_DETAIL;
        return sendAnswer(reply, errorAnswer("invalid_transaction_hash", { detail }));
      }
      const stored = await fromStore(reply, "settlements", READ_FAILED, () =>
        app.documentStore.get("settlements", id),
      );
      if (stored === null) return sendAnswer(reply, errorAnswer("receipt_not_found"));
      return sendStoredDocument(request, reply, stored);
    },
  );
}
