/**
 * What crosses the thread boundary for a bundle verification, and the refusal both threads
 * may build: types and pure values only, so the main thread (`bundle-verifications.ts`) and
 * the workers (`answer.ts`, the MCP and ERC-8004 answers) share them without either loading
 * the other's side.
 */
import type { Verdict } from "../../verifier/bundle/result.js";
import { type ErrorCode, type SentAnswer, ServiceError } from "../errors.js";
import type { CacheableVerdict } from "./cached-verdict.js";

export interface VerifyFlags {
  requireAnchor: boolean;
  receipt: boolean;
}

export interface VerifyTask extends VerifyFlags {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  /** A single bundle's answer comes back in parts, for the digest cache. */
  cache?: boolean;
  /**
   * The cap units the main thread authorised (the unit already held plus what the cap has
   * left): a body whose estimate needs more is refused before its signatures are checked.
   * Absent (the bench's floor, tests of the pool): only `MAX_UNITS_PER_REQUEST` applies.
   */
  authorisedUnits?: number;
}

/**
 * How many of each verdict an answer holds, for `/metrics`: counted where the verdicts are
 * made, so the main thread never parses an answer to count them.
 */
export type VerdictTally = Partial<Record<Verdict, number>>;

/**
 * An answer to a verification request; a refusal names its code, so that a caller that wraps
 * the answer in its own shape (MCP) can tell a refusal without parsing it.
 */
export type VerificationAnswer = SentAnswer & { refused?: ErrorCode };

/**
 * The worker's answer with its verdict tally, or a single bundle verified for the cache: the
 * main thread caches that verdict and answers 200 from it.
 */
export type VerifyOutcome = (
  | (VerificationAnswer & { verdicts?: VerdictTally })
  | { cacheable: CacheableVerdict; verdicts: VerdictTally }
) & {
  /** The cap units the answer is charged (`cost.ts`); absent on a refusal before the count. */
  units?: number;
};

/** The refusal of a request whose verdicts would pass the result budget. */
export function resultTooLargeError(limit: number): ServiceError<"result_too_large"> {
  return new ServiceError("result_too_large", {
    detail: `the verdicts would hold more than ${limit} bytes of errors and reasons; send fewer or smaller bundles per request`,
    limit,
  });
}

/** Its body, for answers that carry it inside another shape (MCP's JSON-RPC error `data`). */
export function resultTooLarge(limit: number) {
  return resultTooLargeError(limit).body();
}
