/**
 * The `verify_bundle` tool's second half with `cache: true`, on the main thread: the shared
 * bundle verification reads the digest cache and, on a miss, verifies the bundle on a worker
 * and remembers it, exactly as for `POST /verify?cache=1`. The tool answers with that payload
 * (verdict, receipt when asked for, `cache`, `service`) as its structured content.
 */
import type { RunOptions } from "../../cpu-pool.js";
import type { BundleVerifications } from "../../verification/bundle-verifications.js";
import type { BundleVerificationLookup } from "./answer.js";
import { resultResponse, resultTooLargeResponse, toolResult } from "./json-rpc.js";

/** A response as text; `tooLarge` when it is the result budget's refusal of the body. */
export interface VerifiedPart {
  json: string;
  tooLarge?: true;
  /** A result its HTTP endpoint charges (`McpReplyPart`). */
  workDone?: true;
}

export async function answerCachedVerifyBundle(
  verifications: BundleVerifications,
  lookup: BundleVerificationLookup & { authorisedUnits: number },
  maxResultBytes: number,
  options: RunOptions,
): Promise<VerifiedPart> {
  const answer = await verifications.verify(
    Buffer.from(lookup.body),
    {
      requireAnchor: lookup.requireAnchor,
      receipt: lookup.receipt,
      cache: true,
      authorisedUnits: lookup.authorisedUnits,
    },
    options,
  );
  if (answer.statusCode === 200) {
    // With `cache`, the answer is built on this thread from the cached parts: always text.
    const text =
      typeof answer.json === "string" ? answer.json : Buffer.from(answer.json).toString();
    return { json: resultResponse(lookup.id, toolResult(text, false)), workDone: true };
  }
  // The body is a bundle object in form 2, so the budget is the one refusal it can meet: the
  // whole budget, since a cached call is never part of a batch.
  if (answer.refused === "result_too_large") {
    return { json: resultTooLargeResponse(lookup.id, maxResultBytes), tooLarge: true };
  }
  throw new Error(`verify_bundle: unexpected refusal ${answer.refused ?? answer.statusCode}`);
}
