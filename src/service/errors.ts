/**
 * The service's one error model (service.md §0): every refusal is a JSON body
 * `{error, detail?, limit?, …}` whose `error` is a stable snake_case code, and every code has
 * exactly one HTTP status, kept in `ERROR_STATUS` below. Routes and worker tasks never pick a
 * status for a code themselves: they build a `ServiceError` (thrown on the main thread) or an
 * error `Answer` (returned from a worker, where errors cannot cross the thread boundary with
 * their class), and both take the status from the table.
 *
 * Shaped after panva/jose and sigstore-js: one base error with a code union; the code is both
 * a property of the instance and what a client sees.
 */
import type { FastifyReply } from "fastify";
import { PAYMENT_ERROR_REASONS, type PaymentErrorCode } from "../payments/errors.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import type { JsonValue } from "../verifier/json/value.js";
import { chargeUnits, chargeWorkDone } from "./work-charged.js";

/**
 * The payment codes are listed once, with their x402 reasons (payments/errors.ts); here they
 * only get their status, typed per code so that `ErrorStatus<"signer_mismatch">` is `402`.
 */
const PAYMENT_ERROR_STATUS = Object.fromEntries(
  Object.keys(PAYMENT_ERROR_REASONS).map((code) => [code, 402]),
) as { readonly [Code in PaymentErrorCode]: 402 };

/** Every public error code of the HTTP API and its one status. */
export const ERROR_STATUS = {
  // 400: the request cannot be read or is not of the endpoint's form.
  bad_request: 400,
  invalid_json: 400,
  bad_shape: 400,
  batch_too_large: 400,
  result_too_large: 400,
  conflicting_credentials: 400,
  invalid_digest: 400,
  invalid_proof_encoding: 400,
  invalid_header_encoding: 400,
  invalid_height: 400,
  invalid_transaction_hash: 400,
  bad_revocations_document: 400,
  bad_submission: 400,
  missing_section: 400,
  submission_not_canonical: 400,
  proof_rejected: 400,
  // ERC-8004 request checks (endpoints/erc8004/answer.ts).
  ambiguous_bundle: 400,
  bad_bundle: 400,
  bad_bundle_bytes: 400,
  bad_chain_id: 400,
  bad_registry_address: 400,
  bad_registry_checksum: 400,
  bad_request_id: 400,
  bad_task_hash: 400,
  missing_bundle: 400,
  missing_request_id: 400,
  missing_task_hash: 400,
  // Crystal envelopes (crystals/envelope.ts) and tenancy.
  bad_envelope: 400,
  missing_member: 400,
  unknown_member: 400,
  unsupported_spec: 400,
  unsupported_cipher: 400,
  invalid_crystal_id: 400,
  invalid_parent_crystal_id: 400,
  invalid_tenant_hash: 400,
  invalid_nonce: 400,
  invalid_ciphertext: 400,
  invalid_size_bytes: 400,
  size_mismatch: 400,
  invalid_created_at: 400,
  invalid_metadata_public: 400,
  metadata_too_large: 400,
  crystal_id_mismatch: 400,
  missing_tenant: 400,
  ambiguous_tenant: 400,
  // Evaluation keys' proof of work (access/evaluation/challenges.ts).
  invalid_challenge: 400,
  challenge_expired: 400,
  insufficient_proof_of_work: 400,
  // Idempotency-Key (plugins/idempotency.ts).
  invalid_idempotency_key: 400,
  // Context notarization requests (src/notarization/request.ts; `invalid_digest` above).
  unsupported_fields: 400,
  missing_required_digest: 400,
  invalid_context_digest: 400,
  invalid_prompt_hash: 400,
  invalid_field: 400,
  invalid_metadata: 400,
  invalid_metadata_key: 400,
  invalid_metadata_value: 400,
  invalid_canonical_statement: 400,
  // 401/402/403: who may call.
  missing_key: 401,
  invalid_key: 401,
  key_expired: 401,
  internal_token_required: 401,
  payment_required: 402,
  // x402 challenges (402): why a payment (payments/errors.ts lists its codes) or a pass token
  // (payments/pass-token.ts) was not taken; the challenge offers a new one.
  ...PAYMENT_ERROR_STATUS,
  pass_malformed: 402,
  pass_signature_invalid: 402,
  pass_issuer_unknown: 402,
  pass_not_yet_valid: 402,
  pass_expired: 402,
  pass_scope_mismatch: 402,
  loopback_only: 403,
  origin_not_allowed: 403,
  tenant_forbidden: 403,
  crystal_quota_exceeded: 403,
  anchor_quota_exceeded: 403,
  notarization_quota_exceeded: 403,
  // 404/405/406/408/409/413/415/417/422/429/431.
  not_found: 404,
  no_document: 404,
  anchor_not_found: 404,
  receipt_not_found: 404,
  crystal_not_found: 404,
  notarization_not_found: 404,
  evaluation_keys_disabled: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  crystal_conflict: 409,
  challenge_already_used: 409,
  idempotency_key_in_flight: 409,
  body_too_large: 413,
  // The request's estimated cost (docs/cost-bounds.md) passes what one request may cost.
  cost_exceeds_limit: 413,
  ciphertext_too_large: 413,
  unsupported_media_type: 415,
  // A request body with a Content-Encoding other than identity (http/body-form.ts).
  unsupported_content_encoding: 415,
  expectation_failed: 417,
  bundle_not_canonicalizable: 422,
  task_hash_unbound: 422,
  parent_not_found: 422,
  idempotency_key_reused: 422,
  daily_cap_reached: 429,
  // The request's estimated cost needs more cap units than its daily cap has left.
  cost_exceeds_cap: 429,
  evaluation_limit_reached: 429,
  evaluation_keys_exhausted: 429,
  payment_rate_limited: 429,
  too_many_uploads: 429,
  // An address's keyless refusals (404s, caps' 429s) past its in-process bucket (issue 34).
  too_many_refusals: 429,
  headers_too_large: 431,
  // The client closed its connection before its answer (nginx's 499): nobody reads the body,
  // but the audit line and the metrics say what happened to the request.
  client_closed: 499,
  // 5xx: the service, or what it depends on, cannot answer now.
  internal_error: 500,
  stored_document_invalid: 500,
  facilitator_unreachable: 502,
  facilitator_error: 502,
  facilitator_bad_response: 502,
  // The facilitator's answer is unknown, however it failed: one status (service-decisions.md).
  facilitator_timeout: 502,
  overloaded: 503,
  // The request's CPU work passed CPU_TASK_DEADLINE_MS (`limit`, ms; GET /info).
  work_limit_exceeded: 503,
  too_many_connections: 503,
  memory_budget_exceeded: 503,
  // A queue's byte budget in Redis, or the principal's share of it, is full (issue 34).
  queue_full: 503,
  store_unavailable: 503,
  anchor_store_unavailable: 503,
  settlement_store_unavailable: 503,
  crystal_store_unavailable: 503,
  nonce_ledger_unavailable: 503,
  challenge_ledger_unavailable: 503,
  payments_unavailable: 503,
  corpus_not_deployed: 503,
  idempotency_store_unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus<Code extends ErrorCode> = (typeof ERROR_STATUS)[Code];
/** The codes answered with `Status` (x402 challenges take only 402 codes, say). */
export type ErrorCodeWithStatus<Status extends number> = {
  [Code in ErrorCode]: ErrorStatus<Code> extends Status ? Code : never;
}[ErrorCode];

/** Members an error body may carry besides `error` (errorResponseSchema). */
// A type literal, not an interface, so that it is assignable to the open record that
// `errorAnswer` takes for endpoint-specific members.
export type ErrorFields = {
  detail?: string;
  limit?: number;
  hint?: string;
  docs?: string;
};

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code);
}

/** A refusal raised on the main thread; the error handler answers it from the table. */
export class ServiceError<Code extends ErrorCode = ErrorCode> extends Error {
  override readonly name = "ServiceError";
  readonly status: ErrorStatus<Code>;

  constructor(
    readonly code: Code,
    readonly fields: ErrorFields = {},
  ) {
    super(fields.detail === undefined ? code : `${code}: ${fields.detail}`);
    this.status = ERROR_STATUS[code];
  }

  /** The body a client sees: the code first, then the given members in a fixed order. */
  body(): { error: Code } & ErrorFields {
    return { error: this.code, ...this.fields };
  }
}

/**
 * Refusals that report work done (issue 22, "work done is charged"): they are charged to a
 * cap, billed and settled like a result, although their status is not 2xx.
 * - `task_hash_unbound`: the whole evaluation (service.md §5 asks for it), only unsigned;
 * - `result_too_large`: found while verifying, after the work it refuses to answer.
 */
export const CHARGED_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "task_hash_unbound",
  "result_too_large",
]);

/**
 * What a route sends: a status and a body already serialised (worker tasks answer with it, so
 * the main thread forwards text and never re-serialises a verdict). `charged`: a refusal in
 * `CHARGED_REFUSALS`.
 */
export interface Answer<Status extends number = number> {
  statusCode: Status;
  json: string;
  charged?: true;
  /** The cap units the answer is charged when more than one (`cost.ts`). */
  units?: number;
}

export function answer<Status extends number>(
  statusCode: Status,
  payload: unknown,
): Answer<Status> {
  return { statusCode, json: dumpCompact(payload) };
}

/**
 * The answer to a refusal, with its status from the table. Besides the common members, an
 * endpoint's error schema may add its own after `error` (an anchor `code`, the evaluation of an
 * unbound ERC-8004 task hash).
 */
export function errorAnswer<Code extends ErrorCode>(
  code: Code,
  fields: ErrorFields & Record<string, unknown> = {},
): Answer<ErrorStatus<Code>> {
  return refusalAnswer(code, answer(ERROR_STATUS[code], { error: code, ...fields }));
}

function refusalAnswer<Status extends number>(code: ErrorCode, refusal: Answer<Status>) {
  return CHARGED_REFUSALS.has(code) ? { ...refusal, charged: true as const } : refusal;
}

/**
 * An answer whose body may be its UTF-8 bytes, as a worker wrote them and moved them to the
 * main thread (`POST /verify`): sent as they are, never decoded or copied.
 */
export type SentAnswer<Status extends number = number> = Omit<Answer<Status>, "json"> & {
  json: string | Uint8Array;
};

export function sendAnswer(
  reply: FastifyReply,
  { statusCode, json, charged, units }: SentAnswer,
): FastifyReply {
  if (charged) chargeWorkDone(reply);
  if (units !== undefined) chargeUnits(reply, units);
  return reply
    .code(statusCode)
    .type("application/json; charset=utf-8")
    .send(typeof json === "string" ? json : answerBuffer(json));
}

/** A Buffer over `bytes`' memory (a view, not a copy), which Fastify sends as it is. */
export function answerBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * Parses a request body strictly (verifier.md §1.2); a body that is not strict JSON is
 * `ServiceError("invalid_json")` with the parser's reason. Worker tasks catch it and answer
 * with `errorAnswerOf`.
 */
export function parseRequestJson(bytes: Uint8Array): JsonValue {
  try {
    return parseJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) {
      throw new ServiceError("invalid_json", { detail: error.message });
    }
    throw error;
  }
}

/** A worker's `ServiceError` as the answer the main thread forwards; anything else rethrows. */
export function errorAnswerOf(error: unknown): Answer {
  if (error instanceof ServiceError) {
    return refusalAnswer(error.code, answer(error.status, error.body()));
  }
  throw error;
}

/**
 * What a worker task's `run()` returns, or the answer to the `ServiceError` it threw (a thrown
 * error would reach the main thread without its class, so the worker answers it itself).
 */
export function answerOrRefusal<Result>(run: () => Result): Result | Answer {
  try {
    return run();
  } catch (error) {
    return errorAnswerOf(error);
  }
}

/** `answerOrRefusal` for a task that awaits (a signature, a corpus load). */
export async function answerOrRefusalAsync<Result>(
  run: () => Promise<Result>,
): Promise<Result | Answer> {
  try {
    return await run();
  } catch (error) {
    return errorAnswerOf(error);
  }
}
