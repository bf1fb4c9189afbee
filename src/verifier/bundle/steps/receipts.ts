/** Step C: each receipt on its own — spec, task, type, body fields, time, chain, signature. */
import { verifyEd25519 } from "../../crypto/ed25519.js";
import { isObject, member } from "../../json/value.js";
import { pyRepr, pyStr } from "../../py/repr.js";
import { pyEquals } from "../../py/semantics.js";
import { isValidTimestamp } from "../../timestamps.js";
import { bodyOf, type VerificationContext } from "../context.js";
import { isKnownType, isSupportedSpec, requiredFields } from "../record-types.js";
import { bodyVocabularyProblems } from "./body-vocabulary.js";

export function checkReceipts(ctx: VerificationContext): void {
  const bundleTaskId = member(ctx.bundle, "task_id");
  let expectedPrev: string | null = null;
  ctx.receipts.forEach((receipt, index) => {
    if (!isObject(receipt)) return;
    const rid = member(receipt, "receipt_id");
    const spec = member(receipt, "spec");
    if (!isSupportedSpec(spec))
      ctx.fail("version_unsupported", `receipt spec=${pyRepr(spec)}`, rid);
    if (!pyEquals(member(receipt, "task_id"), bundleTaskId)) {
      ctx.fail("task_mismatch", "receipt task_id != bundle task_id", rid);
    }
    const type = member(receipt, "type");
    if (!isKnownType(type, spec)) {
      // The chain pointer is not advanced, so the next receipt reports a chain_break too.
      ctx.fail("unknown_type", `type=${pyRepr(type)}`, rid);
      return;
    }
    const body = bodyOf(receipt);
    if (body === null) return;
    const missing = requiredFields(type, spec).filter((field) => !body.has(field));
    if (missing.length > 0) ctx.fail("malformed", `missing body fields ${pyRepr(missing)}`, rid);
    for (const problem of bodyVocabularyProblems(type, spec, body))
      ctx.fail("malformed", problem, rid);
    const issuedAt = member(receipt, "issued_at");
    if (!isValidTimestamp(issuedAt)) {
      ctx.fail("malformed", `issued_at not RFC 3339 UTC: ${pyRepr(issuedAt)}`, rid);
    }
    const seq = member(receipt, "seq");
    if (!pyEquals(seq, index))
      ctx.fail("chain_break", `seq ${pyStr(seq)} != position ${index}`, rid);
    if (!pyEquals(member(receipt, "prev"), expectedPrev)) {
      ctx.fail("chain_break", "prev digest mismatch", rid);
    }
    const view = ctx.signedView(receipt);
    if (view === null) {
      ctx.fail("malformed", "receipt is not canonically encodable (floats are rejected)", rid);
      expectedPrev = null;
    } else {
      expectedPrev = view.digest;
    }
    const sig = member(receipt, "sig");
    const value = isObject(sig) ? member(sig, "value") : null;
    if (
      !isObject(sig) ||
      member(sig, "alg") !== "ed25519" ||
      typeof value !== "string" ||
      value === ""
    ) {
      ctx.fail("bad_signature", "missing or unsupported sig", rid);
      return;
    }
    if (view === null) {
      ctx.fail("bad_signature", "receipt is not canonically encodable", rid);
      return;
    }
    const issuer = receipt.get("issuer");
    const issuerId = isObject(issuer) ? (issuer.has("id") ? issuer.get("id")! : "") : "";
    if (typeof issuerId !== "string" || !verifyEd25519(issuerId, view.bytes, value)) {
      ctx.fail("bad_signature", "signature does not verify", rid);
    }
  });
}
