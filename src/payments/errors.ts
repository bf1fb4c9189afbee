/**
 * Typed failures of the x402 payment checks. `code` is our stable snake_case code (what a
 * client sees in `error`); `reason` is the x402 `invalidReason` a facilitator would give for
 * the same fault (protocols.md §1.5), so a 402 can be answered in the protocol's own terms.
 * Several of our codes share one x402 reason: x402 names one signature reason for what we
 * tell apart (high-s, bad v, wrong signer, smart-wallet length).
 */
import { CodedError, codedErrorClass } from "../verifier/coded-error.js";

export const PAYMENT_ERROR_REASONS = {
  payment_header_too_large: "invalid_payload",
  multiple_payment_headers: "invalid_payload",
  invalid_payment_encoding: "invalid_payload",
  invalid_payment_json: "invalid_payload",
  invalid_payload: "invalid_payload",
  invalid_x402_version: "invalid_x402_version",
  invalid_scheme: "invalid_scheme",
  invalid_network: "invalid_network",
  invalid_payment_requirements: "invalid_payment_requirements",
  invalid_exact_evm_payload_recipient_mismatch: "invalid_exact_evm_payload_recipient_mismatch",
  invalid_exact_evm_payload_authorization_value: "invalid_exact_evm_payload_authorization_value",
  invalid_exact_evm_payload_authorization_valid_after:
    "invalid_exact_evm_payload_authorization_valid_after",
  invalid_exact_evm_payload_authorization_valid_before:
    "invalid_exact_evm_payload_authorization_valid_before",
  invalid_exact_evm_payload_signature: "invalid_exact_evm_payload_signature",
  signature_high_s: "invalid_exact_evm_payload_signature",
  signature_bad_v: "invalid_exact_evm_payload_signature",
  signature_unsupported_length: "invalid_exact_evm_payload_signature",
  signer_mismatch: "invalid_exact_evm_payload_signature",
  nonce_already_used: "invalid_transaction_state",
} as const;

export type PaymentErrorCode = keyof typeof PAYMENT_ERROR_REASONS;

export class PaymentError extends CodedError<PaymentErrorCode> {
  override readonly name = "PaymentError";

  /** The x402 `invalidReason` for this failure. */
  get reason(): string {
    return PAYMENT_ERROR_REASONS[this.code];
  }

  /** The reason under the wire version's vocabulary (v2 renamed the value mismatch). */
  reasonFor(x402Version: 1 | 2): string {
    if (x402Version === 2 && this.code === "invalid_exact_evm_payload_authorization_value") {
      return "invalid_exact_evm_payload_authorization_value_mismatch";
    }
    return this.reason;
  }
}

export type PaymentConfigErrorCode = "payment_config_invalid";
/** A payment configuration that cannot produce valid requirements (a startup error). */
export class PaymentConfigError extends codedErrorClass<PaymentConfigErrorCode>(
  "payment_config_invalid",
) {
  override readonly name = "PaymentConfigError";
}
