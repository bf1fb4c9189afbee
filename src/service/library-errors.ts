/**
 * The one place where a library error becomes a refusal. Every library error extends
 * `CodedError` (src/verifier/coded-error.ts) with a `code` from a union declared next to its
 * class; `LIBRARY_ERROR_CODES` gives each of those codes its public `ErrorCode`, and routes
 * and the error handler ask `refusalFor` instead of testing classes one by one.
 *
 * `internal_error` marks a fault: a library failure no client caused (a config, a stored
 * document the service wrote, a Python exception the verifier turns into a verdict). Those
 * get no refusal, so the error handler logs them and answers 500 with the request id.
 */
import type { FastifyReply } from "fastify";
import type {
  KeyNameTakenErrorCode,
  KeyOptionErrorCode,
  KeyStoreErrorCode,
} from "../access/api-keys.js";
import type { ChallengeLedgerUnavailableErrorCode } from "../access/evaluation/issuer.js";
import type { CorpusErrorCode } from "../conformance/corpus.js";
import type { SubmissionErrorCode } from "../conformance/grade.js";
import type { CrystalOpenErrorCode } from "../crystals/client.js";
import type { LineageSummaryErrorCode } from "../crystals/lineage.js";
import type { ValidatorKeyErrorCode } from "../erc8004/validator-key.js";
import type { NotarizationErrorCode } from "../notarization/errors.js";
import {
  PAYMENT_ERROR_REASONS,
  type PaymentConfigErrorCode,
  type PaymentErrorCode,
} from "../payments/errors.js";
import type { PassTokenErrorCode } from "../payments/pass-token.js";
import type { RevocationStoreErrorCode } from "../revocations/documents.js";
import type { DocumentStoreUnavailableErrorCode } from "../storage/document-store.js";
import type { AnchorProofErrorCode } from "../verifier/anchor/ots.js";
import type { ResultBudgetExceededCode } from "../verifier/bundle/budget.js";
import type { CommitmentErrorCode } from "../verifier/bundle/steps/redactions.js";
import { CodedError } from "../verifier/coded-error.js";
import type { Base64ErrorCode } from "../verifier/crypto/base64.js";
import type { DidKeyErrorCode } from "../verifier/crypto/did-key.js";
import type { CanonicalizationErrorCode } from "../verifier/json/canonical.js";
import type { StrictJsonErrorCode } from "../verifier/json/parse.js";
import type { Utf8DecodeErrorCode } from "../verifier/json/utf8.js";
import type { PyOverflowErrorCode, PyValueErrorCode } from "../verifier/py/semantics.js";
import type { RevocationLoadCode } from "../verifier/revocations/document.js";
import type { RevocationsUnusableCode } from "../verifier/revocations/statements.js";
import type { TimestampCrashCode } from "../verifier/timestamps.js";
import type { VerificationReceiptIssueErrorCode } from "../verifier/verification-receipt/issue.js";
import type { ConfigErrorCode } from "./config.js";
import type {
  ClientGoneErrorCode,
  CpuPoolOverloadedErrorCode,
  WorkLimitExceededErrorCode,
} from "./cpu-pool.js";
import { type ErrorCode, type ErrorFields, ServiceError } from "./errors.js";
import type { InternalTokenErrorCode } from "./internal-token.js";
import type { KeyRotationErrorCode } from "./key-rotation.js";
import type { ServiceKeyErrorCode } from "./service-key.js";

/**
 * The code of every error a library can throw in the service's process. The CLIs' private
 * errors and the web page's input errors never reach it and are not here.
 */
export type LibraryErrorCode =
  // The verifier.
  | AnchorProofErrorCode
  | Base64ErrorCode
  | CanonicalizationErrorCode
  | CommitmentErrorCode
  | DidKeyErrorCode
  | PyOverflowErrorCode
  | PyValueErrorCode
  | ResultBudgetExceededCode
  | RevocationLoadCode
  | RevocationsUnusableCode
  | StrictJsonErrorCode
  | TimestampCrashCode
  | Utf8DecodeErrorCode
  | VerificationReceiptIssueErrorCode
  // Payments, access, storage and the other libraries.
  | KeyNameTakenErrorCode
  | KeyOptionErrorCode
  | KeyStoreErrorCode
  | ChallengeLedgerUnavailableErrorCode
  | CorpusErrorCode
  | CrystalOpenErrorCode
  | DocumentStoreUnavailableErrorCode
  | LineageSummaryErrorCode
  | NotarizationErrorCode
  | PassTokenErrorCode
  | PaymentConfigErrorCode
  | PaymentErrorCode
  | SubmissionErrorCode
  | ValidatorKeyErrorCode
  // The service's own modules.
  | ClientGoneErrorCode
  | ConfigErrorCode
  | CpuPoolOverloadedErrorCode
  | InternalTokenErrorCode
  | KeyRotationErrorCode
  | RevocationStoreErrorCode
  | ServiceKeyErrorCode
  | WorkLimitExceededErrorCode;

/** The payment codes are public codes already (payments/errors.ts lists them once). */
const PAYMENT_CODES = Object.fromEntries(
  Object.keys(PAYMENT_ERROR_REASONS).map((code) => [code, code]),
) as { readonly [Code in PaymentErrorCode]: Code };

/** Each library code's public code. A code missing here does not compile. */
export const LIBRARY_ERROR_CODES = {
  // A proof the parser refuses: the refusal carries the parser's code in its own `code`.
  bad_magic: "proof_rejected",
  unsupported_version: "proof_rejected",
  unknown_op: "proof_rejected",
  unsupported_op: "proof_rejected",
  truncated: "proof_rejected",
  invalid_varuint: "proof_rejected",
  invalid_length: "proof_rejected",
  trailing_data: "proof_rejected",
  message_too_long: "proof_rejected",
  invalid_result: "proof_rejected",
  recursion_limit: "proof_rejected",
  too_many_nodes: "proof_rejected",
  // Inside the verifier these become verdicts; one that escapes is a fault.
  bad_base64: "internal_error",
  bad_commitment: "internal_error",
  bad_did_key: "internal_error",
  py_overflow_error: "internal_error",
  py_value_error: "internal_error",
  timestamp_crash: "internal_error",
  receipt_not_issuable: "internal_error",
  result_too_large: "result_too_large",
  // A client's text that is not strict JSON or has no canonical bytes. The same failure on a
  // stored document is a fault: only the code that parsed the request maps it.
  invalid_json: "invalid_json",
  invalid_utf8: "invalid_json",
  not_canonicalizable: "bundle_not_canonicalizable",
  // Revocations a client sent.
  bad_revocations_document: "bad_revocations_document",
  revocations_unreachable: "bad_revocations_document",
  revocations_insecure_url: "bad_revocations_document",
  revocations_too_large: "bad_revocations_document",
  revocations_unusable: "bad_revocations_document",
  // x402 payments and pass tokens: the same codes, answered with a new challenge.
  ...PAYMENT_CODES,
  pass_malformed: "pass_malformed",
  pass_signature_invalid: "pass_signature_invalid",
  pass_issuer_unknown: "pass_issuer_unknown",
  pass_not_yet_valid: "pass_not_yet_valid",
  pass_expired: "pass_expired",
  pass_scope_mismatch: "pass_scope_mismatch",
  bad_submission: "bad_submission",
  missing_section: "missing_section",
  submission_not_canonical: "submission_not_canonical",
  // A notarization request or lookup (src/notarization): the library's codes are public codes.
  unsupported_fields: "unsupported_fields",
  missing_required_digest: "missing_required_digest",
  invalid_context_digest: "invalid_context_digest",
  invalid_prompt_hash: "invalid_prompt_hash",
  invalid_field: "invalid_field",
  invalid_metadata: "invalid_metadata",
  invalid_metadata_key: "invalid_metadata_key",
  invalid_metadata_value: "invalid_metadata_value",
  invalid_canonical_statement: "invalid_canonical_statement",
  invalid_digest: "invalid_digest",
  notarization_not_found: "notarization_not_found",
  // What the service depends on cannot answer now.
  store_unavailable: "store_unavailable",
  challenge_ledger_unavailable: "challenge_ledger_unavailable",
  pool_overloaded: "overloaded",
  work_limit_exceeded: "work_limit_exceeded",
  client_gone: "client_closed",
  // Operators' and the service's own faults.
  bad_key_option: "internal_error",
  key_name_taken: "internal_error",
  key_store_invalid: "internal_error",
  bad_lineage_summary: "internal_error",
  crystal_unopenable: "internal_error",
  corpus_invalid: "internal_error",
  payment_config_invalid: "internal_error",
  validator_key_invalid: "internal_error",
  config_invalid: "internal_error",
  internal_token_invalid: "internal_error",
  key_rotation_refused: "internal_error",
  revocation_merge_refused: "internal_error",
  service_key_invalid: "internal_error",
} as const satisfies Record<LibraryErrorCode, ErrorCode>;

/** The public code of a library code, or null for a code no library of the service throws. */
export function publicCodeOf(code: string): ErrorCode | null {
  return Object.hasOwn(LIBRARY_ERROR_CODES, code)
    ? LIBRARY_ERROR_CODES[code as LibraryErrorCode]
    : null;
}

/** A library error of the service's libraries: narrows `code` to the table's keys. */
export function isLibraryError(error: unknown): error is CodedError<LibraryErrorCode> {
  return error instanceof CodedError && publicCodeOf(error.code) !== null;
}

/**
 * The refusal a library error stands for, with `fields` (from the error when a function), or
 * null when `error` is no library error or is a fault (`internal_error`): rethrow it then.
 * A library error that carries a `limit` (a deadline, a byte budget) passes it on.
 */
export function refusalFor(
  error: unknown,
  fields: ErrorFields | ((error: CodedError<LibraryErrorCode>) => ErrorFields) = {},
): ServiceError | null {
  if (!isLibraryError(error)) return null;
  const code = LIBRARY_ERROR_CODES[error.code];
  if (code === "internal_error") return null;
  const limit = "limit" in error && typeof error.limit === "number" ? { limit: error.limit } : {};
  return new ServiceError(code, {
    ...limit,
    ...(typeof fields === "function" ? fields(error) : fields),
  });
}

/**
 * The refusal for a library error no route caught. Only conditions of the service itself
 * (5xx, and 499 for a client gone) are answered: a 4xx names a fault of the request, which
 * only the code that read the request can tell from a fault of the service's own data.
 */
export function escapedRefusal(error: unknown): ServiceError | null {
  const refusal = refusalFor(error);
  return refusal !== null && refusal.status >= 499 ? refusal : null;
}

/**
 * Refusals of a condition that passes: the answer carries `Retry-After: 1`. Nothing was
 * half-written (every store write is one atomic statement), so retrying is safe.
 */
export const RETRY_LATER: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "overloaded",
  "store_unavailable",
  "anchor_store_unavailable",
  "settlement_store_unavailable",
  "crystal_store_unavailable",
  "challenge_ledger_unavailable",
]);

/**
 * The document store that cannot be reached, as each store's routes name it. Four public codes
 * for one condition, kept because the recorded answers (OpenAPI's error enum) pin all four
 * (docs/service-decisions.md, "One condition, four codes"); they are produced only here.
 */
export const STORE_UNAVAILABLE = {
  documents: "store_unavailable",
  anchors: "anchor_store_unavailable",
  settlements: "settlement_store_unavailable",
  crystals: "crystal_store_unavailable",
} as const satisfies Record<string, ErrorCode>;

export type StoreName = keyof typeof STORE_UNAVAILABLE;

/** The store's 503 with `Retry-After: 1`, set on `reply` (kept when the refusal is thrown). */
export function storeUnavailable(
  reply: FastifyReply,
  store: StoreName,
  detail?: string,
): ServiceError {
  const refusal = new ServiceError(
    STORE_UNAVAILABLE[store],
    detail === undefined ? {} : { detail },
  );
  return withRetryAfter(reply, refusal);
}

/**
 * `call()`'s result; a store that cannot be reached is thrown as the store's 503 (see
 * `storeUnavailable`), anything else as it was.
 */
export async function fromStore<Result>(
  reply: FastifyReply,
  store: StoreName,
  detail: string,
  call: () => Promise<Result>,
): Promise<Result> {
  try {
    return await call();
  } catch (error) {
    if (refusalFor(error)?.code !== "store_unavailable") throw error;
    throw storeUnavailable(reply, store, detail);
  }
}

/** Sets `Retry-After` for a refusal of a condition that passes; the refusal as it was. */
export function withRetryAfter(reply: FastifyReply, refusal: ServiceError): ServiceError {
  if (RETRY_LATER.has(refusal.code)) reply.header("retry-after", "1");
  return refusal;
}
