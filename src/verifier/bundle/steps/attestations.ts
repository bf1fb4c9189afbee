/** Step I: counterparty attestations on deliveries, then decision input provenance. */
import { verifyEd25519 } from "../../crypto/ed25519.js";
import { CanonicalizationError, canonicalBytes } from "../../json/canonical.js";
import { isObject, type JsonObject, type JsonValue, member } from "../../json/value.js";
import { pyRepr } from "../../py/repr.js";
import { pyTruthy } from "../../py/semantics.js";
import { bodyOf, receiptIdOf, typeOf, type VerificationContext } from "../context.js";

/** The body with `counterparty.attestation` removed: what the counterparty signed. */
export function attestationView(body: JsonObject, counterparty: JsonObject): JsonObject {
  const unsigned = new Map(counterparty);
  unsigned.delete("attestation");
  const view = new Map(body);
  view.set("counterparty", unsigned);
  return view;
}

function attestationVerifies(
  body: JsonObject,
  counterparty: JsonObject,
  attestation: JsonValue,
): boolean {
  if (!isObject(attestation) || member(attestation, "alg") !== "ed25519") return false;
  const key = member(attestation, "key");
  const value = member(attestation, "value");
  if (typeof key !== "string" || typeof value !== "string") return false;
  let message: Buffer;
  try {
    message = canonicalBytes(attestationView(body, counterparty));
  } catch (error) {
    if (error instanceof CanonicalizationError) return false;
    throw error;
  }
  return verifyEd25519(key, message, value);
}

function checkDeliveryAttestations(ctx: VerificationContext): void {
  const entries: JsonValue[] = [];
  for (const receipt of ctx.wellFormed) {
    if (typeOf(receipt) !== "delivery.attestation") continue;
    const rid = receiptIdOf(receipt);
    const body = bodyOf(receipt);
    const counterparty: JsonValue =
      body === null ? new Map() : body.has("counterparty") ? body.get("counterparty")! : new Map();
    const attestation = isObject(counterparty) ? member(counterparty, "attestation") : null;
    const counterpartyId = isObject(counterparty) ? member(counterparty, "id") : null;
    if (!pyTruthy(attestation)) {
      entries.push(
        new Map<string, JsonValue>([
          ["receipt_id", rid],
          ["counterparty", counterpartyId],
          ["attestation", "absent"],
        ]),
      );
      continue;
    }
    const valid =
      body !== null &&
      isObject(counterparty) &&
      attestationVerifies(body, counterparty, attestation);
    entries.push(
      new Map<string, JsonValue>([
        ["receipt_id", rid],
        ["counterparty", counterpartyId],
        ["attestation", valid ? "valid" : "invalid"],
        ["key", isObject(attestation) ? member(attestation, "key") : null],
      ]),
    );
    if (!valid) ctx.fail("bad_attestation", "counterparty attestation does not verify", rid);
  }
  if (entries.length > 0) ctx.summaryAdditions.set("attestations", entries);
}

function checkProvenance(ctx: VerificationContext): void {
  for (const receipt of ctx.wellFormed) {
    const body = bodyOf(receipt);
    if (typeOf(receipt) !== "task.decision" || body === null) continue;
    const provenance = member(body, "input_provenance");
    if (!isObject(provenance)) continue;
    const sourcesHash = member(provenance, "observed_sources_hash");
    if (sourcesHash === null) continue;
    if (
      typeof sourcesHash !== "string" ||
      !(sourcesHash.startsWith("sha256:") || sourcesHash.startsWith("merkle-sha256:"))
    ) {
      ctx.fail(
        "provenance_invalid",
        `observed_sources_hash has unsupported form: ${pyRepr(sourcesHash)}`,
        receiptIdOf(receipt),
      );
    }
  }
}

export function checkAttestations(ctx: VerificationContext): void {
  checkDeliveryAttestations(ctx);
  checkProvenance(ctx);
}
