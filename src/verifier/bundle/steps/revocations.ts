/** Step J: revocation statements carried in the bundle and supplied from outside. */
import { isArray, isObject, type JsonValue, member } from "../../json/value.js";
import { pyTruthy } from "../../py/semantics.js";
import {
  mergeStatements,
  RevocationsUnusable,
  type StatementCheck,
  verifyStatements,
} from "../../revocations/statements.js";
import { isValidTimestamp, pyIsoformat, timestampMillis } from "../../timestamps.js";
import { issuerIdOf, receiptIdOf, type VerificationContext } from "../context.js";

export function checkRevocations(ctx: VerificationContext): void {
  const carried = member(ctx.bundle, "revocations");
  const bundleStatements: JsonValue = pyTruthy(carried) ? carried : [];
  // The shape pass already reported these; the reference then ignores external lists too.
  if (!isArray(bundleStatements) || !bundleStatements.every(isObject)) return;
  const external = ctx.externalRevocations;
  const merged = mergeStatements(bundleStatements, external ?? []);
  let check: StatementCheck;
  try {
    check = verifyStatements(merged);
  } catch (error) {
    if (!(error instanceof RevocationsUnusable)) throw error;
    ctx.fail("bad_revocation", `revocations unusable: ${error.message}`);
    return;
  }
  for (const detail of check.errors) ctx.fail("bad_revocation", detail);
  for (const receipt of ctx.wellFormed) {
    const issuerId = issuerIdOf(receipt);
    const issuedAt = member(receipt, "issued_at");
    if (typeof issuerId !== "string" || !isValidTimestamp(issuedAt)) continue;
    const issuedAtMillis = timestampMillis(issuedAt);
    for (const revocation of check.revoked) {
      if (revocation.key === issuerId && issuedAtMillis >= revocation.revokedAt) {
        ctx.fail(
          "key_revoked",
          `issuer key ${issuerId} was revoked at ${pyIsoformat(revocation.revokedAt)}`,
          receiptIdOf(receipt),
        );
      }
    }
  }
  if (merged.length > 0) ctx.summaryAdditions.set("revocations_checked", check.revoked.length);
  if (external !== null) ctx.summaryAdditions.set("revocations_external", external.length);
}
