/**
 * `BundleBuilder`: appends signed receipts to a chain, assigning `seq` (the position in the
 * receipts list) and `prev` (the digest of the previous object receipt minus `sig`).
 *
 * Broken chains are built on purpose by tests, in two ways that the verifier tells apart:
 * `envelope` overrides are applied before signing (the receipt is consistently signed but
 * wrong), `tamper` runs after signing (the signature no longer covers the change). Either
 * way the next receipt's `prev` is the digest of the receipt as it was signed, as an honest
 * issuer would have chained it.
 */
import { recordDigest } from "../crypto/digest.js";
import type { Ed25519Signer } from "../crypto/ed25519.js";
import type { JsonObject, JsonValue } from "../json/value.js";
import { type JsonInput, receiptEnvelope, signReceipt, toJson } from "./receipt.js";

export interface BundleRecord {
  type: string;
  body: JsonInput;
  /** Signs the receipt and is its `issuer.id`. */
  signer: Ed25519Signer;
  issuedAt: string;
  /** Defaults to `receipt-<seq>`. */
  receiptId?: string;
  /** `issuer.kind`; defaults to `agent` (the verifier never checks it). */
  issuerKind?: string;
  /** The receipt's own `spec`; defaults to the bundle's (mixed-version bundles override it). */
  spec?: string;
  /** Envelope members set (or added) before signing: `seq`, `prev`, `task_id`, extras… */
  envelope?: Readonly<Record<string, JsonInput>>;
  /** Edits applied after signing, so the signature no longer covers them. */
  tamper?: (receipt: JsonObject) => void;
}

export interface BundleExtras {
  anchors?: JsonInput;
  revocations?: JsonInput;
  disclosureMap?: JsonInput;
  chainHead?: JsonInput;
  /** Top-level members set last: overrides (`spec`, `task_id`, `receipts`) or unknown members. */
  members?: Readonly<Record<string, JsonInput>>;
}

export class BundleBuilder {
  private readonly receipts: JsonValue[] = [];
  /** Digest of the last object receipt as signed: the next receipt's `prev`. */
  private lastDigest: string | null = null;

  /** A builder for a bundle with this `spec`; an undefined `taskId` leaves `task_id` out. */
  constructor(
    readonly spec: string,
    readonly taskId?: JsonInput,
  ) {}

  /** Signs and appends a receipt; returns it as stored (after any `tamper`). */
  append(record: BundleRecord): JsonObject {
    const seq = this.receipts.length;
    const unsigned = receiptEnvelope({
      spec: record.spec ?? this.spec,
      receiptId: record.receiptId ?? `receipt-${seq}`,
      taskId: this.taskId,
      issuedAt: record.issuedAt,
      issuer: { kind: record.issuerKind ?? "agent", id: record.signer.did },
      type: record.type,
      seq,
      prev: this.lastDigest,
      body: record.body,
    });
    for (const [name, value] of Object.entries(record.envelope ?? {})) {
      unsigned.set(name, toJson(value));
    }
    const receipt = signReceipt(unsigned, record.signer);
    this.lastDigest = recordDigest(receipt);
    record.tamper?.(receipt);
    this.receipts.push(receipt);
    return receipt;
  }

  /** Appends a raw entry (a non-object such as null) without touching the chain pointer. */
  appendRaw(value: JsonInput): void {
    this.receipts.push(toJson(value));
  }

  /** A fresh bundle: `spec`, `task_id`, a copy of the receipts, then the extras given. */
  build(extras: BundleExtras = {}): JsonObject {
    const bundle = new Map<string, JsonValue>([["spec", this.spec]]);
    if (this.taskId !== undefined) bundle.set("task_id", toJson(this.taskId));
    bundle.set("receipts", toJson(this.receipts));
    const optional: [string, JsonInput | undefined][] = [
      ["anchors", extras.anchors],
      ["revocations", extras.revocations],
      ["disclosure_map", extras.disclosureMap],
      ["chain_head", extras.chainHead],
      ...Object.entries(extras.members ?? {}),
    ];
    for (const [name, value] of optional) if (value !== undefined) bundle.set(name, toJson(value));
    return bundle;
  }
}

/** An `anchors[]` entry binding `receipt` by its digest, with optional anchor metadata. */
export function anchorEntry(receipt: JsonObject, anchor?: JsonInput): JsonObject {
  const entry = new Map<string, JsonValue>([
    ["target", receipt.get("receipt_id") ?? null],
    ["hash", recordDigest(receipt)],
  ]);
  if (anchor !== undefined) entry.set("anchor", toJson(anchor));
  return entry;
}

/** The bundle-level `chain_head` describing `last`, the final receipt (verifier.md §4 L). */
export function chainHeadFor(last: JsonObject, anchored?: JsonInput): JsonObject {
  const head = new Map<string, JsonValue>([
    ["seq", last.get("seq") ?? null],
    ["receipt_id", last.get("receipt_id") ?? null],
    ["digest", recordDigest(last)],
  ]);
  if (anchored !== undefined) head.set("anchored", toJson(anchored));
  return head;
}
