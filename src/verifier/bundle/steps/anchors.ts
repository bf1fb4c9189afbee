/** Step K: anchor entries — shape, binding to a receipt digest, anchor type. */
import { isArray, isObject, type JsonObject, type JsonValue, member } from "../../json/value.js";
import { pyRepr, pyStr } from "../../py/repr.js";
import { pyEquals, pyTruthy } from "../../py/semantics.js";
import { receiptIdOf, type VerificationContext } from "../context.js";
import { ANCHOR_TYPES } from "../record-types.js";

export function checkAnchors(ctx: VerificationContext): void {
  const anchors = member(ctx.bundle, "anchors");
  if (!pyTruthy(anchors)) {
    if (ctx.requireAnchor) ctx.provisional("anchor_missing");
    return;
  }
  if (!isArray(anchors)) return;
  const byId = new Map<string, JsonObject>();
  for (const receipt of ctx.wellFormed) {
    const id = receiptIdOf(receipt);
    if (typeof id === "string") byId.set(id, receipt);
  }
  const kinds: JsonValue[] = [];
  for (const anchor of anchors) {
    if (!isObject(anchor)) continue;
    const target = member(anchor, "target");
    const receipt = typeof target === "string" ? byId.get(target) : undefined;
    const digest = receipt === undefined ? null : ctx.digestOf(receipt);
    if (digest === null || !pyEquals(member(anchor, "hash"), digest)) {
      ctx.fail("anchor_invalid", `anchor invalid for ${pyStr(target)}`);
      continue;
    }
    const meta = member(anchor, "anchor");
    if (meta === null) continue;
    const type = isObject(meta) ? member(meta, "type") : null;
    if (!isObject(meta) || !ANCHOR_TYPES.has(type)) {
      ctx.fail("anchor_invalid", `unknown anchor type: ${pyRepr(isObject(meta) ? type : meta)}`);
      continue;
    }
    kinds.push(type);
  }
  ctx.summaryAdditions.set("anchors", kinds.length > 0 ? kinds : ["hash-only"]);
}
