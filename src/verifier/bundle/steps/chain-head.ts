/** Step L: the bundle-level `chain_head` must describe the final receipt (any spec). */
import { isObject, type JsonValue, member } from "../../json/value.js";
import { pyEquals } from "../../py/semantics.js";
import { receiptIdOf, type VerificationContext } from "../context.js";
import { ANCHOR_TYPES } from "../record-types.js";

export function checkChainHead(ctx: VerificationContext): void {
  const head = member(ctx.bundle, "chain_head");
  if (!isObject(head)) return;
  const last = ctx.wellFormed.at(-1);
  if (last === undefined) return;
  const digest = ctx.digestOf(last);
  if (digest === null) return;
  if (
    !pyEquals(member(head, "seq"), member(last, "seq")) ||
    !pyEquals(member(head, "receipt_id"), receiptIdOf(last)) ||
    !pyEquals(member(head, "digest"), digest)
  ) {
    ctx.fail("head_mismatch", "chain_head does not match the final receipt");
    return;
  }
  const anchored = member(head, "anchored");
  if (anchored === null) {
    if (ctx.requireAnchor) ctx.provisional("head_anchor_missing");
    return;
  }
  const type = isObject(anchored) ? member(anchored, "type") : null;
  const proofRef = isObject(anchored) ? member(anchored, "proof_ref") : null;
  if (!ANCHOR_TYPES.has(type) || typeof proofRef !== "string" || proofRef === "") {
    ctx.fail("head_anchor_invalid", "chain_head anchored entry is invalid");
    return;
  }
  ctx.summaryAdditions.set(
    "chain_head",
    new Map<string, JsonValue>([
      ["seq", member(last, "seq")],
      ["anchored", type],
    ]),
  );
}
