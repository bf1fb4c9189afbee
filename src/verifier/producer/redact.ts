/**
 * Redaction at issuance time (verifier.md §3.4): a value inside a receipt is replaced by a
 * salted commitment, and the changed receipt and every receipt after it are re-signed and
 * re-chained, as the reference's `disclose.py` does, so the bundle stays a valid chain.
 *
 * Paths use the reference tool's grammar (`receipts[3].body.quality_flags`, dot-separated
 * `name` or `name[i]` tokens) and, like that tool, index the raw receipts list. The verifier
 * names redactions by their index among object receipts only; the two agree unless the
 * list holds non-object entries. Unlike the reference tool this does not refuse required
 * fields: the verifier reports those as `redacted_required`, and tests need such bundles.
 *
 * Re-signing changes the digest of the redacted receipt and of every receipt after it, so
 * digest references to them (`offer_ref`, `agreement_ref`, `authority_ref`, anchors,
 * `chain_head`) must be computed after redacting.
 */
import { randomBytes } from "node:crypto";
import { commitField } from "../bundle/steps/redactions.js";
import { recordDigest } from "../crypto/digest.js";
import type { Ed25519Signer } from "../crypto/ed25519.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../json/value.js";
import { signReceipt, toJsonObject } from "./receipt.js";

/** The signer for an issuer's did (redaction re-signs receipts of every issuer after the change). */
export type SignerResolver = (did: string) => Ed25519Signer;

export function signersByDid(signers: readonly Ed25519Signer[]): SignerResolver {
  const byDid = new Map(signers.map((signer) => [signer.did, signer]));
  return (did) => {
    const signer = byDid.get(did);
    if (signer === undefined) throw new Error(`no signer for ${did}`);
    return signer;
  };
}

export interface RedactOptions {
  signerFor: SignerResolver;
  /** Marks the content as erased (`erased: true`): without a disclosure it is gone for good. */
  erase?: boolean;
  /** Adds `disclosure_map[path] = {salt, value}` so a verifier can check the commitment. */
  disclose?: boolean;
  /** The salt as hex; defaults to 16 random bytes, as the reference tool uses. */
  saltHex?: string;
}

type Step = string | number;

const TOKEN = /^([^[\]]+)((?:\[\d+\])*)$/;

function parsePath(path: string): Step[] {
  const steps: Step[] = [];
  for (const token of path.split(".")) {
    const match = TOKEN.exec(token);
    if (match === null) throw new Error(`malformed path: ${path}`);
    steps.push(match[1]!);
    for (const index of match[2]!.matchAll(/\[(\d+)\]/g)) steps.push(Number(index[1]));
  }
  if (steps[0] !== "receipts" || typeof steps[1] !== "number" || steps.length < 3) {
    throw new Error(`path must start with receipts[i] and name a member inside it: ${path}`);
  }
  return steps;
}

function child(container: JsonValue, step: Step, path: string): JsonValue {
  const value =
    typeof step === "number"
      ? isArray(container)
        ? container[step]
        : undefined
      : isObject(container)
        ? container.get(step)
        : undefined;
  if (value === undefined) throw new Error(`path not found: ${path}`);
  return value;
}

function replaceChild(container: JsonValue, step: Step, value: JsonValue): void {
  if (typeof step === "number") (container as JsonValue[])[step] = value;
  else (container as JsonObject).set(step, value);
}

function resign(receipt: JsonObject, signerFor: SignerResolver): JsonObject {
  const issuer = receipt.get("issuer");
  const did = isObject(issuer) ? issuer.get("id") : undefined;
  if (typeof did !== "string")
    throw new Error("cannot re-sign a receipt without a string issuer.id");
  return signReceipt(receipt, signerFor(did));
}

/** A copy of `bundle` with the value at `path` replaced by its commitment. */
export function redact(bundle: JsonObject, path: string, options: RedactOptions): JsonObject {
  const [, receiptIndex, ...inner] = parsePath(path) as [string, number, ...Step[]];
  const redacted = toJsonObject(bundle, "bundle");
  const receipts = redacted.get("receipts");
  if (!isArray(receipts)) throw new Error("bundle has no receipts list");
  const receipt = child(receipts, receiptIndex, path);
  if (!isObject(receipt)) throw new Error(`receipt ${receiptIndex} is not an object`);

  let parent: JsonValue = receipt;
  for (const step of inner.slice(0, -1)) parent = child(parent, step, path);
  const last = inner.at(-1)!;
  const value = child(parent, last, path);
  const salt = options.saltHex ?? randomBytes(16).toString("hex");
  const commitment = new Map<string, JsonValue>([
    ["redacted", true],
    ["commit", commitField(salt, value)],
  ]);
  if (options.erase) commitment.set("erased", true);
  replaceChild(parent, last, commitment);

  receipts[receiptIndex] = resign(receipt, options.signerFor);
  let prev = recordDigest(receipts[receiptIndex]!);
  for (let i = receiptIndex + 1; i < receipts.length; i++) {
    const later = receipts[i]!;
    if (!isObject(later)) continue;
    later.set("prev", prev);
    receipts[i] = resign(later, options.signerFor);
    prev = recordDigest(receipts[i]!);
  }

  if (options.disclose) {
    const existing = redacted.get("disclosure_map");
    const disclosures: JsonObject = isObject(existing) ? existing : new Map();
    disclosures.set(
      path,
      new Map<string, JsonValue>([
        ["salt", salt],
        ["value", value],
      ]),
    );
    redacted.set("disclosure_map", disclosures);
  }
  return redacted;
}
