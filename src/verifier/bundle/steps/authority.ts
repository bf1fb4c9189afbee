/** Step G: 0.6 authority grants and the records that cite them (`authority_ref`). */
import { member } from "../../json/value.js";
import { pyRepr, pyStr } from "../../py/repr.js";
import { pyEquals } from "../../py/semantics.js";
import { isValidTimestamp, timestampMillis } from "../../timestamps.js";
import { bodyOf, issuerIdOf, receiptIdOf, typeOf, type VerificationContext } from "../context.js";
import { BOUND_TYPES } from "../record-types.js";
import { isBefore, recordsByDigest } from "./agreements.js";

export function checkAuthority(ctx: VerificationContext): void {
  // Grants count even where their own spec made them `unknown_type` (vector 24g).
  const grants = recordsByDigest(ctx, "authority.grant");
  const referenced = new Set<string>();
  for (const receipt of ctx.wellFormed) {
    const body = bodyOf(receipt);
    if (
      !BOUND_TYPES.has(typeOf(receipt)) ||
      member(receipt, "spec") !== "continuity-receipt/0.6" ||
      body === null
    ) {
      continue;
    }
    const ref = member(body, "authority_ref");
    if (ref === null) continue;
    const rid = receiptIdOf(receipt);
    const grant = typeof ref === "string" ? grants.get(ref) : undefined;
    if (grant === undefined) {
      ctx.insufficient(`missing_authority:${pyStr(rid)}`);
      continue;
    }
    referenced.add(ref as string);
    const grantBody = bodyOf(grant);
    if (grantBody === null) continue;
    const boundAt = member(receipt, "issued_at");
    let effectiveAt = member(grant, "issued_at");
    const grantedAt = member(grantBody, "granted_at");
    if (
      isValidTimestamp(grantedAt) &&
      (!isValidTimestamp(effectiveAt) || timestampMillis(grantedAt) > timestampMillis(effectiveAt))
    ) {
      effectiveAt = grantedAt;
    }
    if (isBefore(boundAt, effectiveAt)) {
      ctx.fail(
        "authority_before_grant",
        `bound receipt issued before its authority grant ${pyStr(receiptIdOf(grant))}`,
        rid,
      );
    }
    const agent = member(grantBody, "agent");
    const issuerId = issuerIdOf(receipt);
    if (typeof agent === "string" && !pyEquals(issuerId, agent)) {
      ctx.fail(
        "authority_agent_mismatch",
        `bound receipt issuer ${pyRepr(issuerId)} is not the grant's agent`,
        rid,
      );
    }
    const expiresAt = member(grantBody, "expires_at");
    if (isBefore(expiresAt, boundAt)) {
      ctx.fail(
        "authority_expired",
        `bound receipt issued after the authority window ${pyStr(expiresAt)}`,
        rid,
      );
    }
  }
  for (const [digest, grant] of grants) {
    if (!referenced.has(digest))
      ctx.provisional(`authority_unreferenced:${pyStr(receiptIdOf(grant))}`);
  }
}
