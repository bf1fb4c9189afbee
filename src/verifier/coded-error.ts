/** Base of the verifier's typed errors: a stable machine code plus a human detail. */
export class CodedError<Code extends string> extends Error {
  constructor(
    readonly code: Code,
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}
