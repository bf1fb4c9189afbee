/**
 * The contract of the settlement endpoints (service.md §4: `POST /payment-receipts`,
 * `GET /receipts/{tx}`): their operations, schemas and the worker task that checks a
 * submitted settlement. The routes and `worker.ts` share it.
 */
import type { SettlementJobRequest } from "../../../../queues/settlements.js";
import {
  SETTLEMENT_RECEIPT_KIND,
  SETTLEMENT_RECEIPT_VERSION,
  settlementSchema,
  TRANSACTION_HASH_PATTERN,
  USER_AGENT_FAMILIES,
} from "../../../payments/settlement-receipt.js";
import { commonErrorResponses, errorResponseSchema } from "../../schemas/errors.js";
import { defineTask } from "../../tasks/define-task.js";
import { defineOperation } from "../operation.js";
import type { PaymentReceiptRefusal, PaymentReceiptTask } from "./answer.js";
import { INTERNAL_TOKEN_HEADER } from "./internal-access.js";

export const paymentReceiptTask = defineTask<
  PaymentReceiptTask,
  PaymentReceiptRefusal | SettlementJobRequest
>(import.meta.url);

const receiptDigestSchema = {
  type: "string",
  pattern: "^sha256:[0-9a-f]{64}$",
  description: "`sha256:` + hex of the JCS bytes of the receipt without `sig` (what was signed)",
} as const;

/** The signed settlement receipt, members in the order they are stored. */
const settlementReceiptSchema = {
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

const txMember = { type: "string", description: "`0x` + 64 lower-case hex" } as const;

const postPaymentReceiptSchema = {
  description:
    "Internal: signs and stores the settlement receipt of a settled payment, once per " +
    "transaction. Loopback callers only, with `X-Internal-Token`",
  headers: {
    type: "object",
    properties: {
      [INTERNAL_TOKEN_HEADER]: {
        type: "string",
        description: "the token in `INTERNAL_TOKEN_FILE` (default `DATA_DIR/internal.token`)",
      },
    },
  },
  body: settlementSchema,
  response: {
    200: {
      description:
        "the receipt is durable; `idempotent` (present only when true): the transaction " +
        "already had this receipt, and no other was signed",
      type: "object",
      required: ["stored", "tx", "digest", "receipt"],
      properties: {
        stored: { type: "boolean", const: true },
        tx: txMember,
        digest: receiptDigestSchema,
        idempotent: { type: "boolean", const: true },
        receipt: settlementReceiptSchema,
      },
    },
    202: {
      description: "accepted but not yet durable; poll `status_url`",
      type: "object",
      required: ["stored", "tx", "status_url"],
      properties: {
        stored: { type: "boolean", const: false },
        tx: txMember,
        status_url: { type: "string" },
      },
    },
    400: {
      ...errorResponseSchema,
      description: "invalid_json, invalid_transaction_hash, or bad_request with a `detail`",
    },
    401: { ...errorResponseSchema, description: "internal_token_required: missing or wrong" },
    403: { ...errorResponseSchema, description: "loopback_only: the caller is not on loopback" },
    ...commonErrorResponses,
  },
} as const;

export const recordPaymentReceiptOperation = defineOperation({
  method: "POST",
  url: "/payment-receipts",
  operationId: "recordPaymentReceipt",
  summary: "Record a settled payment (internal)",
  tag: "payments",
  access: "internal",
  refusals: [
    "bad_request",
    "invalid_json",
    "invalid_transaction_hash",
    "internal_token_required",
    "loopback_only",
    "queue_full",
  ],
  schema: postPaymentReceiptSchema,
});

export const getPaymentReceiptOperation = defineOperation({
  method: "GET",
  url: "/receipts/:tx",
  operationId: "getPaymentReceipt",
  summary: "Read a settlement receipt",
  tag: "payments",
  access: "keyless",
  refusals: ["invalid_transaction_hash", "receipt_not_found"],
  schema: getReceiptSchema,
});
