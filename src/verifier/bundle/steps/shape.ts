/** Step B: top-level and per-receipt container shapes. */
import { isArray, isObject } from "../../json/value.js";
import type { VerificationContext } from "../context.js";

export function checkShape(ctx: VerificationContext): void {
  ctx.receipts.forEach((receipt, index) => {
    if (!isObject(receipt)) {
      ctx.fail("malformed", `receipt ${index} is not an object`);
      return;
    }
    const id = receipt.get("receipt_id");
    const rid = typeof id === "string" ? id : null;
    if (!isObject(receipt.get("body"))) ctx.fail("malformed", "body is not an object", rid);
    if (!isObject(receipt.get("issuer"))) ctx.fail("malformed", "issuer is not an object", rid);
  });
  const { bundle } = ctx;
  const anchors = bundle.get("anchors");
  if (anchors !== undefined && anchors !== null) {
    if (!isArray(anchors)) ctx.fail("malformed", "anchors is not a list");
    else
      for (const anchor of anchors) {
        if (!isObject(anchor)) ctx.fail("anchor_invalid", "anchor entry is not an object");
      }
  }
  const revocations = bundle.get("revocations");
  if (revocations !== undefined && revocations !== null) {
    if (!isArray(revocations)) ctx.fail("bad_revocation", "revocations must be a list");
    else
      for (const statement of revocations) {
        if (!isObject(statement)) {
          ctx.fail("bad_revocation", "revocation statements must be objects");
        }
      }
  }
  const disclosureMap = bundle.get("disclosure_map");
  if (disclosureMap !== undefined && disclosureMap !== null && !isObject(disclosureMap)) {
    ctx.fail("malformed", "disclosure_map is not an object");
  }
  const chainHead = bundle.get("chain_head");
  if (chainHead !== undefined && chainHead !== null && !isObject(chainHead)) {
    ctx.fail("malformed", "chain_head is not an object");
  }
}
