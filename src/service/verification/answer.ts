/**
 * The verification of bundles that `POST /verify`, MCP's `verify_bundle` and ERC-8004's
 * validation share (service.md §1), from strictly parsed input to the verdict payload, on a
 * worker thread: the bytes are parsed exactly once, there, and the main thread only forwards
 * the finished JSON text (`bundle-verifications.ts` is its main-thread half, with the digest
 * cache and the verdict counter).
 *
 * Decisions where service.md is silent:
 * - an empty batch (`{"bundles": []}`) is valid: 200 with `results: []` and `count: 0`;
 * - a body nested deeper than the parser's limit (1,000 containers) is `400 invalid_json`:
 *   it cannot be read as a value, so its form cannot be told;
 * - with `?receipt=1`, a batch item that is not an object gets `verification_receipt_error`
 *   instead of a receipt (there is no bundle to bind a receipt to);
 * - the errors and reasons of all the verdicts of one request share one budget
 *   (`maxResultBytes`); verification stops as soon as it is spent and the request gets
 *   `400 result_too_large` with the limit (docs/service-decisions.md, "Result budget").
 */
import { ResultBudget, ResultBudgetExceeded } from "../../verifier/bundle/budget.js";
import type { Verdict, VerifyResult } from "../../verifier/bundle/result.js";
import { verifyBundle, verifyParsedBundle } from "../../verifier/bundle/verify-bundle.js";
import type { Ed25519Signer } from "../../verifier/crypto/ed25519.js";
import { dumpCompact } from "../../verifier/json/dump.js";
import { parseSigned, StrictJsonError } from "../../verifier/json/parse.js";
import type { SignedSources } from "../../verifier/json/signed-sources.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../../verifier/json/value.js";
import { formatUtcSeconds } from "../../verifier/timestamps.js";
import {
  issueVerificationReceipt,
  VerificationReceiptIssueError,
} from "../../verifier/verification-receipt/index.js";
import { type CostCounts, countVerificationCost, MAX_UNITS_PER_REQUEST, unitsOf } from "../cost.js";
import { answer, errorAnswerOf, ServiceError } from "../errors.js";
import { SERVICE_NAME } from "../service-name.js";
import type { CacheableVerdict } from "./cached-verdict.js";
import {
  resultTooLargeError,
  type VerdictTally,
  type VerifyFlags,
  type VerifyOutcome,
} from "./outcome.js";

export const BAD_SHAPE_DETAIL =
  'body must be a bundle object, {"bundle": {...}} or {"bundles": [...]}';

export interface VerifyRequestContext {
  maxBatch: number;
  /** Bytes of errors and reasons the verdicts of one request may hold. */
  maxResultBytes: number;
  /** The current service key (it changes when the key is rotated). */
  signer(): Ed25519Signer;
}

type VerifyBody =
  | { form: "single"; bundle: JsonObject }
  | { form: "batch"; bundles: JsonValue[] }
  | { form: "bad_shape" };

/** The detection order of service.md §1: batch, then `{"bundle": …}`, then a bare bundle. */
function detectBody(body: JsonValue): VerifyBody {
  if (!isObject(body)) return { form: "bad_shape" };
  const bundles = body.get("bundles");
  if (isArray(bundles)) return { form: "batch", bundles };
  if (!body.has("bundle")) return { form: "single", bundle: body };
  const bundle = body.get("bundle");
  return isObject(bundle) ? { form: "single", bundle } : { form: "bad_shape" };
}

type VerdictPayload = VerifyResult & {
  verification_receipt?: JsonObject;
  verification_receipt_error?: string;
};

function verdictPayload(
  bundle: JsonValue,
  flags: VerifyFlags,
  signer: Ed25519Signer,
  verifiedAt: string,
  budget: ResultBudget,
  sources: SignedSources | null,
): VerdictPayload {
  const result = verifyParsedBundle(
    bundle,
    { requireAnchor: flags.requireAnchor, budget },
    sources,
  );
  if (!flags.receipt) return result;
  if (!isObject(bundle)) {
    return { ...result, verification_receipt_error: "bundle is not an object" };
  }
  try {
    const receipt = issueVerificationReceipt(bundle, result, signer, { verifiedAt });
    return { ...result, verification_receipt: receipt };
  } catch (error) {
    if (!(error instanceof VerificationReceiptIssueError)) throw error;
    return { ...result, verification_receipt_error: error.message };
  }
}

/**
 * One bundle's verdict within a budget of `limit` bytes of errors and reasons, the bound
 * `POST /verify` puts on a request: ERC-8004's evaluation carries the whole verdict, so it has
 * the same bound. A verdict that would pass it is thrown as `result_too_large`.
 */
export function verifyWithinBudget(
  bundle: JsonObject,
  flags: Pick<VerifyFlags, "requireAnchor">,
  limit: number,
): VerifyResult {
  try {
    return verifyBundle(bundle, {
      requireAnchor: flags.requireAnchor,
      budget: new ResultBudget(limit),
    });
  } catch (error) {
    if (!(error instanceof ResultBudgetExceeded)) throw error;
    throw resultTooLargeError(error.limit);
  }
}

/**
 * A single bundle's verification for the digest cache. The receipt is always issued (one more
 * signature) so that a later `?receipt=1` hit can be answered with it, byte for byte.
 */
function cacheableVerdict(
  bundle: JsonObject,
  flags: VerifyFlags,
  signer: Ed25519Signer,
  verifiedAt: string,
  budget: ResultBudget,
  sources: SignedSources | null,
): { entry: CacheableVerdict; verdict: Verdict } {
  const { verification_receipt, verification_receipt_error, ...result } = verdictPayload(
    bundle,
    { ...flags, receipt: true },
    signer,
    verifiedAt,
    budget,
    sources,
  );
  const entry: CacheableVerdict = {
    verdictJson: dumpCompact(result),
    receipt:
      verification_receipt === undefined
        ? { error: verification_receipt_error ?? "no receipt was issued" }
        : { json: dumpCompact(verification_receipt) },
    verifiedAt,
  };
  return { entry, verdict: result.verdict };
}

/**
 * The answer to one bundle (body forms 1 and 2): the verdict payload plus `service`. MCP's
 * `verify_bundle` tool answers with exactly this, so its verdicts equal `POST /verify`'s.
 * Throws `ResultBudgetExceeded` when `budget` runs out.
 */
export function singleBundlePayload(
  bundle: JsonObject,
  flags: VerifyFlags,
  signer: Ed25519Signer,
  budget: ResultBudget,
  verifiedAt: string = formatUtcSeconds(),
  sources: SignedSources | null = null,
): VerdictPayload & { service: string } {
  return {
    ...verdictPayload(bundle, flags, signer, verifiedAt, budget, sources),
    service: SERVICE_NAME,
  };
}

/**
 * The cap units a request of `counts` is charged, or its refusal before any signature is
 * checked: past `MAX_UNITS_PER_REQUEST` it could not finish within the work deadline
 * (`413 cost_exceeds_limit`), past `authorisedUnits` the principal's cap has not got them
 * (`429 cost_exceeds_cap`). Neither refusal is charged: no signature was checked.
 */
export function chargeableUnits(counts: CostCounts, authorisedUnits: number): number {
  const units = unitsOf(counts);
  const figures = `${counts.signatures} signatures, ${counts.distinctKeys} keys, ${counts.edgePointSignatures} edge-point signatures, ${counts.bytes} bytes`;
  if (units > MAX_UNITS_PER_REQUEST) {
    throw new ServiceError("cost_exceeds_limit", {
      detail: `this request would cost ${units} units (${figures}); one request may cost at most ${MAX_UNITS_PER_REQUEST}: send fewer or smaller bundles per request`,
      limit: MAX_UNITS_PER_REQUEST,
    });
  }
  if (units > authorisedUnits) {
    throw new ServiceError("cost_exceeds_cap", {
      detail: `this request would cost ${units} units (${figures}); the daily cap has ${authorisedUnits} left`,
      limit: authorisedUnits,
    });
  }
  return units;
}

/**
 * `parseRequestJson` that also notes where each value lies in the body (`parseSigned`), so
 * that a receipt, at whatever depth the body form puts it (a bundle's `receipts`, a batch's
 * bundles' `receipts`), is signed and hashed over bytes spliced from the body rather than
 * encoded again from the parsed value: the same bytes (signed-sources.ts), without walking
 * the value, sorting its names and escaping its strings once more per receipt.
 */
function parseRequestSigned(bytes: Uint8Array): ReturnType<typeof parseSigned> {
  try {
    return parseSigned(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) {
      throw new ServiceError("invalid_json", { detail: error.message });
    }
    throw error;
  }
}

export function answerVerifyRequest(
  bytes: Uint8Array,
  flags: VerifyFlags & { cache?: boolean; authorisedUnits?: number },
  context: VerifyRequestContext,
): VerifyOutcome {
  try {
    const { value, sources } = parseRequestSigned(bytes);
    const request = detectBody(value);
    if (request.form === "bad_shape") {
      throw new ServiceError("bad_shape", { detail: BAD_SHAPE_DETAIL });
    }
    if (request.form === "batch" && request.bundles.length > context.maxBatch) {
      throw new ServiceError("batch_too_large", { limit: context.maxBatch });
    }
    const bundles = request.form === "batch" ? request.bundles : [request.bundle];
    const units = chargeableUnits(
      countVerificationCost(bundles, bytes.byteLength),
      flags.authorisedUnits ?? MAX_UNITS_PER_REQUEST,
    );
    const budget = new ResultBudget(context.maxResultBytes);
    try {
      return { ...verifyDetected(request, flags, context, budget, sources), units };
    } catch (error) {
      if (!(error instanceof ResultBudgetExceeded)) throw error;
      throw resultTooLargeError(error.limit);
    }
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    return { ...errorAnswerOf(error), refused: error.code };
  }
}

function verifyDetected(
  request: Exclude<VerifyBody, { form: "bad_shape" }>,
  flags: VerifyFlags & { cache?: boolean },
  context: VerifyRequestContext,
  budget: ResultBudget,
  sources: SignedSources,
): VerifyOutcome {
  // One timestamp per request: every receipt of a batch records the same verification run.
  const verifiedAt = formatUtcSeconds();
  const signer = context.signer();
  if (request.form === "single" && flags.cache === true) {
    const cacheable = cacheableVerdict(request.bundle, flags, signer, verifiedAt, budget, sources);
    return { cacheable: cacheable.entry, verdicts: { [cacheable.verdict]: 1 } };
  }
  if (request.form === "single") {
    const payload = singleBundlePayload(request.bundle, flags, signer, budget, verifiedAt, sources);
    return { ...answer(200, payload), verdicts: tallyVerdicts([payload]) };
  }
  const results = request.bundles.map((bundle) =>
    verdictPayload(bundle, flags, signer, verifiedAt, budget, sources),
  );
  return {
    ...answer(200, { results, count: results.length, service: SERVICE_NAME }),
    verdicts: tallyVerdicts(results),
  };
}

export function tallyVerdicts(results: readonly { verdict: Verdict }[]): VerdictTally {
  const counts: VerdictTally = {};
  for (const { verdict } of results) counts[verdict] = (counts[verdict] ?? 0) + 1;
  return counts;
}
