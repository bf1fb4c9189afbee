/**
 * The client's one error: a `CodedError` whose `code` is the service's own `error` code when
 * the service refused (`daily_cap_reached`, `batch_too_large`, `payment_required`, …), or one
 * of the client's codes below when no answer could be used. Callers branch on `code`.
 */
import { CodedError } from "../verifier/coded-error.js";

/** What the client itself reports, when the service gave no usable refusal. */
export type ClientFailureCode =
  /** No answer: the connection failed or was reset, and retries ran out (or were not safe). */
  | "connection_failed"
  /** An answer that is not the endpoint's JSON (a proxy's HTML page, a truncated body). */
  | "unexpected_response"
  /** A 402 with no payment hook configured, or a hook that would not pay. */
  | "payment_declined"
  /** An input the client refuses before sending: not strict JSON. */
  | "bundle_not_json"
  /** An input larger than the service's body limit (`/info` `limits.max_body_bytes`). */
  | "bundle_too_large";

/**
 * The service's error codes are stable snake_case strings (service.md §0); the client passes
 * them through as the service sent them rather than keep a copy of the service's table that
 * would go stale against a newer server.
 */
export type ServiceErrorCode = string & {};

export type ReceiptdErrorCode = ClientFailureCode | ServiceErrorCode;

export interface ReceiptdErrorFields {
  /** The HTTP status, or null when there was no answer. */
  status: number | null;
  /** `X-Request-Id` of the answer, to quote to the operator. */
  requestId: string | null;
  /** The whole error body the service sent (null when none). */
  body: Readonly<Record<string, unknown>> | null;
  /** Attempts made, retries included. */
  attempts: number;
}

export class ReceiptdError extends CodedError<ReceiptdErrorCode> {
  readonly status: number | null;
  readonly requestId: string | null;
  readonly body: Readonly<Record<string, unknown>> | null;
  readonly attempts: number;

  constructor(
    code: ReceiptdErrorCode,
    detail: string,
    fields: Partial<ReceiptdErrorFields> = {},
    options?: ErrorOptions,
  ) {
    super(code, detail, options);
    this.name = "ReceiptdError";
    this.status = fields.status ?? null;
    this.requestId = fields.requestId ?? null;
    this.body = fields.body ?? null;
    this.attempts = fields.attempts ?? 1;
  }
}

export function isReceiptdError(error: unknown): error is ReceiptdError {
  return error instanceof ReceiptdError;
}
