/**
 * The one base of every library error (as panva/jose's `JOSEError` and sigstore-js's
 * `BaseError`): a stable machine `code`, from a union declared next to each subclass, plus a
 * human `detail`. Callers branch on `code`, not on classes; the service maps codes to its
 * public refusal codes with one table (src/service/library-errors.ts).
 *
 * It lives in the verifier because the verifier imports nothing outside itself; every other
 * library imports it from here.
 */
export interface CodedErrorOptions extends ErrorOptions {
  /**
   * The message, when it is not `<code>: <detail>`: errors whose message is read as text (a
   * Python exception's words in a verdict, an operator's config error) keep it unprefixed.
   */
  message?: string;
}

export class CodedError<Code extends string = string> extends Error {
  constructor(
    readonly code: Code,
    readonly detail: string,
    options?: CodedErrorOptions,
  ) {
    super(options?.message ?? `${code}: ${detail}`, options);
  }
}

/**
 * The base of an error class with one code whose message is the text it is given (no code
 * prefix), constructed as a plain `Error` is: `new ConfigError(message, { cause })`.
 */
export function codedErrorClass<Code extends string>(code: Code) {
  return class extends CodedError<Code> {
    constructor(message: string, options?: ErrorOptions) {
      super(code, message, { ...options, message });
    }
  };
}

export function isCodedError(error: unknown): error is CodedError {
  return error instanceof CodedError;
}
