/** Step E: rules across records — pass, policy, spend cap, delivery gating, termination. */
import { isObject, type JsonObject, type JsonValue, member } from "../../json/value.js";
import { pyRepr, pyStr } from "../../py/repr.js";
import { PyValueError, pyEquals, pyInt, pyTruthy } from "../../py/semantics.js";
import { bodyOf, receiptIdOf, typeOf, type VerificationContext } from "../context.js";

/** `amount.get("minor") or 0`, then `int()`. */
function minorUnits(money: JsonObject): bigint {
  const minor = member(money, "minor");
  return pyInt(pyTruthy(minor) ? minor : 0);
}

function exceedsCap(amount: JsonObject, cap: JsonObject): boolean {
  if (!pyEquals(member(amount, "currency"), member(cap, "currency"))) return true;
  return minorUnits(amount) > minorUnits(cap);
}

export function checkCrossRecord(ctx: VerificationContext): void {
  const { wellFormed } = ctx;
  const pass = wellFormed.find((r) => typeOf(r) === "session.pass.created");
  if (pass === undefined) {
    ctx.fail("malformed", "chain has no session.pass.created receipt");
    return;
  }
  const passBody = bodyOf(pass);
  if (passBody === null) return;

  for (const receipt of wellFormed) {
    const body = bodyOf(receipt);
    if (typeOf(receipt) !== "task.decision" || body === null) continue;
    const decisionPolicy = member(body, "policy_version");
    const passPolicy = member(passBody, "policy_version");
    if (!pyEquals(decisionPolicy, passPolicy)) {
      ctx.fail(
        "policy_mismatch",
        `decision policy ${pyRepr(decisionPolicy)} != pass policy ${pyRepr(passPolicy)}`,
        receiptIdOf(receipt),
      );
    }
  }

  let cap: JsonValue = member(passBody, "spend_cap");
  if (cap !== null && !isObject(cap)) {
    ctx.fail("malformed", "pass spend_cap is not an object", receiptIdOf(pass));
    cap = null;
  }

  wellFormed.forEach((receipt, index) => {
    const body = bodyOf(receipt);
    if (typeOf(receipt) !== "settlement" || body === null) return;
    const rid = receiptIdOf(receipt);
    const amount = body.has("amount") ? body.get("amount")! : new Map<string, JsonValue>();
    if (!isObject(amount)) {
      ctx.fail("malformed", "settlement amount is not an object", rid);
      return;
    }
    if (isObject(cap)) {
      let exceeded = false;
      try {
        exceeded = exceedsCap(amount, cap);
      } catch (error) {
        if (!(error instanceof PyValueError)) throw error;
        ctx.fail("malformed", "settlement amount is not numeric", rid);
      }
      if (exceeded) {
        ctx.fail("cap_exceeded", `settlement ${pyStr(amount)} exceeds cap ${pyStr(cap)}`, rid);
      }
    }
    if (pyTruthy(member(body, "gated_on_delivery"))) {
      const deliveredBefore = wellFormed
        .slice(0, index)
        .some((earlier) => typeOf(earlier) === "delivery.attestation");
      if (!deliveredBefore) {
        ctx.fail(
          "delivery_before_settlement",
          "gated settlement recorded before any delivery attestation",
          rid,
        );
      }
    }
  });

  if (!wellFormed.some((r) => typeOf(r) === "task.termination")) {
    ctx.fail("missing_termination", "task has no termination receipt");
  }
}
