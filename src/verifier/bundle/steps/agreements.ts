/** Step F: offer/accept agreements and the records bound to them (0.4+). */
import { type JsonObject, type JsonValue, member } from "../../json/value.js";
import { pyRepr, pyStr } from "../../py/repr.js";
import { pyEquals } from "../../py/semantics.js";
import { isValidTimestamp, timestampMillis } from "../../timestamps.js";
import { bodyOf, issuerIdOf, receiptIdOf, typeOf, type VerificationContext } from "../context.js";
import { BOUND_TYPES, isAgreementSpec } from "../record-types.js";

/** Digest → receipt for one record type; a later receipt with the same digest wins. */
export function recordsByDigest(ctx: VerificationContext, type: string): Map<string, JsonObject> {
  const byDigest = new Map<string, JsonObject>();
  for (const receipt of ctx.wellFormed) {
    if (typeOf(receipt) !== type) continue;
    const digest = ctx.digestOf(receipt);
    if (digest !== null) byDigest.set(digest, receipt);
  }
  return byDigest;
}

/** Both timestamps valid and `a < b` (a reference crash if either is not a real instant). */
export function isBefore(a: JsonValue, b: JsonValue): boolean {
  if (!isValidTimestamp(a) || !isValidTimestamp(b)) return false;
  return timestampMillis(a) < timestampMillis(b);
}

function checkAccept(
  ctx: VerificationContext,
  accept: JsonObject,
  offers: Map<string, JsonObject>,
): void {
  const body = bodyOf(accept);
  if (body === null) return;
  const rid = receiptIdOf(accept);
  const offerRef = member(body, "offer_ref");
  const offer = typeof offerRef === "string" ? offers.get(offerRef) : undefined;
  if (offer === undefined) {
    ctx.insufficient(`missing_offer:${pyStr(rid)}`);
    return;
  }
  const offerBody = bodyOf(offer);
  if (offerBody === null) return;
  const validUntil = member(offerBody, "valid_until");
  if (!isValidTimestamp(validUntil)) {
    ctx.fail(
      "malformed",
      `offer valid_until not RFC 3339 UTC: ${pyRepr(validUntil)}`,
      receiptIdOf(offer),
    );
    return;
  }
  if (
    !pyEquals(member(body, "offer_id"), member(offerBody, "offer_id")) ||
    !pyEquals(member(body, "terms_hash"), member(offerBody, "terms_hash"))
  ) {
    ctx.fail("offer_mismatch", "accept does not match the referenced offer", rid);
    return;
  }
  const issuedAt = member(accept, "issued_at");
  if (isValidTimestamp(issuedAt) && timestampMillis(issuedAt) > timestampMillis(validUntil)) {
    ctx.fail("offer_expired", `accept issued after offer valid_until ${validUntil}`, rid);
  }
  if (!isAgreementSpec(member(accept, "spec"))) return;
  const offeree = member(body, "offeree");
  const signer = issuerIdOf(accept);
  if (typeof offeree !== "string" || offeree === "") {
    ctx.fail("malformed", `accept offeree is not a string: ${pyRepr(offeree)}`, rid);
  } else if (!pyEquals(signer, offeree) || !pyEquals(offeree, member(offerBody, "offeree"))) {
    ctx.fail(
      "offeree_mismatch",
      `accept offeree ${pyRepr(offeree)} does not match the signer ${pyRepr(signer)} / offer`,
      rid,
    );
  }
  if (isBefore(issuedAt, member(offer, "issued_at"))) {
    ctx.fail("accept_before_offer", `accept issued before offer ${pyStr(receiptIdOf(offer))}`, rid);
  }
}

function isBoundRecord(receipt: JsonObject): boolean {
  return (
    BOUND_TYPES.has(typeOf(receipt)) &&
    isAgreementSpec(member(receipt, "spec")) &&
    bodyOf(receipt) !== null
  );
}

export function checkAgreements(ctx: VerificationContext): void {
  const offers = recordsByDigest(ctx, "agreement.offer");
  const accepts = recordsByDigest(ctx, "agreement.accept");
  for (const receipt of ctx.wellFormed) {
    if (typeOf(receipt) === "agreement.accept") checkAccept(ctx, receipt, offers);
  }

  const referenced = new Set<string>();
  for (const receipt of ctx.wellFormed) {
    if (!isBoundRecord(receipt)) continue;
    const rid = receiptIdOf(receipt);
    const ref = member(bodyOf(receipt)!, "agreement_ref");
    if (ref === null) continue;
    const accept = typeof ref === "string" ? accepts.get(ref) : undefined;
    if (accept === undefined) {
      ctx.insufficient(`missing_agreement:${pyStr(rid)}`);
      continue;
    }
    referenced.add(ref as string);
    const acceptBody = bodyOf(accept);
    if (acceptBody === null) continue;
    if (isBefore(member(receipt, "issued_at"), member(accept, "issued_at"))) {
      ctx.fail(
        "agreement_before_accept",
        `bound receipt issued before its accept ${pyStr(receiptIdOf(accept))}`,
        rid,
      );
    }
    const offeree = member(acceptBody, "offeree");
    const issuerId = issuerIdOf(receipt);
    if (typeof offeree === "string" && !pyEquals(issuerId, offeree)) {
      ctx.fail(
        "agreement_issuer_mismatch",
        `bound receipt issuer ${pyRepr(issuerId)} is not the offeree`,
        rid,
      );
    }
  }

  for (const [digest, accept] of accepts) {
    if (isAgreementSpec(member(accept, "spec")) && !referenced.has(digest)) {
      ctx.provisional(`agreement_unreferenced:${pyStr(receiptIdOf(accept))}`);
    }
  }

  for (const receipt of ctx.wellFormed) {
    if (!isBoundRecord(receipt) || member(bodyOf(receipt)!, "agreement_ref") !== null) continue;
    const issuerId = issuerIdOf(receipt);
    const issuedAt = member(receipt, "issued_at");
    if (typeof issuerId !== "string" || !isValidTimestamp(issuedAt)) continue;
    for (const accept of accepts.values()) {
      const acceptBody = bodyOf(accept);
      const acceptedAt = member(accept, "issued_at");
      if (
        isAgreementSpec(member(accept, "spec")) &&
        acceptBody !== null &&
        member(acceptBody, "offeree") === issuerId &&
        isValidTimestamp(acceptedAt) &&
        timestampMillis(acceptedAt) <= timestampMillis(issuedAt)
      ) {
        ctx.provisional(`missing_agreement_ref:${pyStr(receiptIdOf(receipt))}`);
        break;
      }
    }
  }
}
