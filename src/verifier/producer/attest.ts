/**
 * Counterparty attestations on `delivery.attestation` bodies (verifier.md §4 step I): the
 * counterparty signs the canonical body in which its own `counterparty` object is taken
 * without the `attestation` member.
 */
import { attestationView } from "../bundle/steps/attestations.js";
import { type Ed25519Signer, ed25519Signature } from "../crypto/ed25519.js";
import { canonicalBytes } from "../json/canonical.js";
import { isObject, type JsonObject } from "../json/value.js";
import { type JsonInput, toJsonObject } from "./receipt.js";

/** A copy of the delivery `body` whose `counterparty.attestation` is signed by `signer`. */
export function attestDelivery(body: JsonInput, signer: Ed25519Signer): JsonObject {
  const attested = toJsonObject(body, "delivery body");
  const counterparty = attested.get("counterparty");
  if (!isObject(counterparty)) throw new TypeError("delivery body has no counterparty object");
  const message = canonicalBytes(attestationView(attested, counterparty));
  counterparty.set("attestation", ed25519Signature(signer, message));
  return attested;
}
