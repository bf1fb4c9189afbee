/**
 * The notarization library's one error type. Its codes are the reference's refusal codes
 * (issue 28), plus `unsupported_fields`, the code this service gives the reference's
 * "400 unsupported fields": the route maps each code to its HTTP status.
 */
import { CodedError } from "../verifier/coded-error.js";

export type NotarizationErrorCode =
  // POST /notarize: the request
  | "unsupported_fields"
  | "missing_required_digest"
  | "invalid_context_digest"
  | "invalid_prompt_hash"
  | "invalid_field"
  | "invalid_metadata"
  | "invalid_metadata_key"
  | "invalid_metadata_value"
  // POST /notarize: a statement that has no canonical form (a lone surrogate in a string)
  | "invalid_canonical_statement"
  // GET /notarize/{digest}
  | "invalid_digest"
  | "notarization_not_found";

export interface NotarizationErrorFields {
  /** `unsupported_fields`: every member the table does not name, in request order. */
  fields?: string[];
  /** The one member refused (`invalid_field`, the digests, metadata entries). */
  field?: string;
}

export class NotarizationError extends CodedError<NotarizationErrorCode> {
  override readonly name = "NotarizationError";
  readonly fields: string[] | undefined;
  readonly field: string | undefined;

  constructor(code: NotarizationErrorCode, detail: string, extra: NotarizationErrorFields = {}) {
    super(code, detail);
    this.fields = extra.fields;
    this.field = extra.field;
  }
}
