/**
 * What the page draws of a bundle: its receipts in bundle order with their links, marks
 * (redactions, disclosures, attestations, anchors, offers, acceptances, grants) and the
 * findings of the verification attached to the receipt each one names.
 *
 * Display only: the verdict comes from the verifier (`api.ts`); this reads the bundle
 * through the verifier's public value functions and never decides anything itself. No DOM.
 */
import { recordDigest } from "../verifier/crypto/digest.js";
import { parseJson } from "../verifier/json/parse.js";
import { isArray, isObject, type JsonValue, member, toPlain } from "../verifier/json/value.js";
import type { Tone } from "./wording.js";
import { splitReason } from "./wording.js";

export type MarkKind =
  | "redaction"
  | "disclosure"
  | "erasure"
  | "attestation"
  | "anchor"
  | "offer"
  | "acceptance"
  | "agreement"
  | "grant"
  | "authority"
  | "settlement"
  | "termination"
  | "succession"
  | "state"
  | "head";

export interface Mark {
  kind: MarkKind;
  text: string;
  tone: Tone;
}

export interface Finding {
  kind: "error" | "provisional" | "insufficient";
  code: string;
  /** The error's detail, or the reason's subject (a receipt id or a field path). */
  detail: string | null;
}

export interface ReceiptNode {
  /** Index in the bundle's `receipts` list. */
  position: number;
  seq: string;
  type: string;
  receiptId: string | null;
  issuer: string | null;
  issuedAt: string | null;
  digest: string | null;
  prev: string | null;
  /** `first`: no prev and none expected; `intact`: prev is the digest of the receipt before. */
  link: "first" | "intact" | "broken";
  /** Position of the receipt whose digest `prev` names, when there is one. */
  prevPointsTo: number | null;
  marks: Mark[];
  findings: Finding[];
}

export interface ChainModel {
  /** False when the bundle is not JSON or has no receipt list: only findings are shown. */
  drawn: boolean;
  receipts: ReceiptNode[];
  bundleFindings: Finding[];
  /** Position of the first receipt (in seq order) that has an error. */
  firstBroken: number | null;
}

/** The verifier's result as the CLI prints it, parsed. */
export interface ResultLike {
  verdict: string;
  errors: { code: string; detail: string; receipt_id?: unknown }[];
  provisional_reasons?: string[];
  insufficient_reasons?: string[];
  summary?: Record<string, unknown>;
}

type Plain = Record<string, unknown>;

function isPlainObject(value: unknown): value is Plain {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === "string"
    ? value
    : JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v));
}

/** Redaction objects (`redacted` identical to true) under `value`, with their paths. */
function redactions(value: unknown, path: string, found: { path: string; erased: boolean }[]) {
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      redactions(item, `${path}[${index}]`, found);
    });
  } else if (isPlainObject(value)) {
    if (value.redacted === true) {
      found.push({ path, erased: Boolean(value.erased) });
      return;
    }
    for (const [key, item] of Object.entries(value)) redactions(item, `${path}.${key}`, found);
  }
}

function digestOf(receipt: JsonValue): string | null {
  try {
    return recordDigest(receipt);
  } catch {
    return null;
  }
}

/** Called while the model is built: `done` of `total` receipts read. */
export type ModelProgress = (done: number, total: number) => void;

const PROGRESS_EVERY = 250;

export function buildChainModel(
  bundleBytes: Uint8Array,
  result: ResultLike,
  onProgress: ModelProgress = () => {},
): ChainModel {
  let bundle: JsonValue = null;
  try {
    bundle = parseJson(bundleBytes, { universalNewlines: true });
  } catch {
    bundle = null;
  }
  const rawReceipts = isObject(bundle) ? member(bundle, "receipts") : null;
  const model: ChainModel = { drawn: false, receipts: [], bundleFindings: [], firstBroken: null };
  if (!isObject(bundle) || !isArray(rawReceipts)) {
    model.bundleFindings = allFindings(result);
    return model;
  }
  model.drawn = true;
  const plainBundle = toPlain(bundle) as Plain;
  const disclosures = isPlainObject(plainBundle.disclosure_map) ? plainBundle.disclosure_map : {};
  const anchors = Array.isArray(plainBundle.anchors) ? plainBundle.anchors : [];

  const nodes: ReceiptNode[] = [];
  const byWellFormed: ReceiptNode[] = [];
  let expectedPrev: string | null = null;
  rawReceipts.forEach((raw, position) => {
    if (position % PROGRESS_EVERY === 0) onProgress(position, rawReceipts.length);
    if (!isObject(raw)) {
      nodes.push({
        position,
        seq: "?",
        type: "(not an object)",
        receiptId: null,
        issuer: null,
        issuedAt: null,
        digest: null,
        prev: null,
        link: "broken",
        prevPointsTo: null,
        marks: [],
        findings: [],
      });
      return;
    }
    const receipt = toPlain(raw) as Plain;
    const issuer = isPlainObject(receipt.issuer) ? text(receipt.issuer.id) : null;
    const prev = text(receipt.prev);
    const digest = digestOf(raw);
    const node: ReceiptNode = {
      position,
      seq: text(receipt.seq) ?? "?",
      type: text(receipt.type) ?? "(no type)",
      receiptId: text(receipt.receipt_id),
      issuer,
      issuedAt: text(receipt.issued_at),
      digest,
      prev,
      link: prev === expectedPrev ? (prev === null ? "first" : "intact") : "broken",
      prevPointsTo: null,
      marks: [],
      findings: [],
    };
    expectedPrev = digest;
    nodes.push(node);
    byWellFormed.push(node);
  });

  const byDigest = new Map<string, ReceiptNode>();
  // The first receipt with a digest: a bundle that repeats receipts has several.
  for (const node of nodes) {
    if (node.digest !== null && !byDigest.has(node.digest)) byDigest.set(node.digest, node);
  }
  const label = (node: ReceiptNode | undefined) =>
    node === undefined ? "a receipt that is not in the bundle" : `receipt #${node.seq}`;

  const anchorsByTarget = new Map<string, Plain[]>();
  for (const anchor of anchors) {
    if (!isPlainObject(anchor) || typeof anchor.target !== "string") continue;
    const list = anchorsByTarget.get(anchor.target) ?? [];
    list.push(anchor);
    anchorsByTarget.set(anchor.target, list);
  }

  byWellFormed.forEach((node, wellFormed) => {
    const receipt = toPlain(rawReceipts[node.position]!) as Plain;
    const body = isPlainObject(receipt.body) ? receipt.body : {};
    if (node.link === "intact") node.prevPointsTo = byWellFormed[wellFormed - 1]?.position ?? null;
    else if (node.prev !== null) node.prevPointsTo = byDigest.get(node.prev)?.position ?? null;
    const marks = node.marks;
    switch (node.type) {
      case "agreement.offer":
        marks.push({
          kind: "offer",
          text: `Offer ${text(body.offer_id) ?? ""} to ${text(body.offeree) ?? "?"}`,
          tone: "neutral",
        });
        break;
      case "agreement.accept":
        marks.push({
          kind: "acceptance",
          text: `Accepts ${label(typeof body.offer_ref === "string" ? byDigest.get(body.offer_ref) : undefined)}`,
          tone: "neutral",
        });
        break;
      case "authority.grant":
        marks.push({
          kind: "grant",
          text: `Grants authority to ${text(body.agent) ?? "?"}`,
          tone: "neutral",
        });
        break;
      case "settlement":
        marks.push({ kind: "settlement", text: "Settlement", tone: "neutral" });
        break;
      case "task.termination":
        marks.push({
          kind: "termination",
          text: `Ends the task (${text(body.reason) ?? "no reason"})`,
          tone: "neutral",
        });
        break;
      case "authority.succession":
        marks.push({
          kind: "succession",
          text: `Authority passes to ${text(body.to_authority) ?? "?"}`,
          tone: "neutral",
        });
        break;
      case "state.commitment":
        marks.push({
          kind: "state",
          text: `Commits ${text(body.state_kind) ?? "state"}`,
          tone: "neutral",
        });
        break;
    }
    if (typeof body.agreement_ref === "string") {
      marks.push({
        kind: "agreement",
        text: `Bound to the agreement of ${label(byDigest.get(body.agreement_ref))}`,
        tone: "neutral",
      });
    }
    if (typeof body.authority_ref === "string") {
      marks.push({
        kind: "authority",
        text: `Acts under the grant of ${label(byDigest.get(body.authority_ref))}`,
        tone: "neutral",
      });
    }
    const found: { path: string; erased: boolean }[] = [];
    redactions(receipt, `receipts[${wellFormed}]`, found);
    for (const { path, erased } of found) {
      const field = path.replace(/^receipts\[\d+\]\./, "");
      const entry = disclosures[path];
      if (isPlainObject(entry) && "salt" in entry && "value" in entry) {
        marks.push({ kind: "disclosure", text: `Redacted, disclosed: ${field}`, tone: "neutral" });
      } else if (erased) {
        marks.push({ kind: "erasure", text: `Erased: ${field}`, tone: "insufficient" });
      } else {
        marks.push({ kind: "redaction", text: `Redacted: ${field}`, tone: "warn" });
      }
    }
    for (const anchor of anchorsByTarget.get(node.receiptId ?? "") ?? []) {
      if (anchor.target !== receipt.receipt_id) continue;
      const meta = isPlainObject(anchor.anchor) ? text(anchor.anchor.type) : null;
      marks.push({
        kind: "anchor",
        text: `Anchored${meta === null ? "" : ` (${meta})`}`,
        tone: "good",
      });
    }
  });

  const byReceiptId = new Map<string, ReceiptNode[]>();
  for (const node of nodes) {
    if (node.receiptId === null) continue;
    const list = byReceiptId.get(node.receiptId) ?? [];
    list.push(node);
    byReceiptId.set(node.receiptId, list);
  }
  const attestations = Array.isArray(result.summary?.attestations)
    ? result.summary.attestations
    : [];
  const attestationsSeen = new Map<string, number>();
  for (const entry of attestations) {
    if (!isPlainObject(entry)) continue;
    const status = String(entry.attestation);
    const tone: Tone = status === "valid" ? "good" : status === "invalid" ? "bad" : "neutral";
    const words =
      status === "absent" ? "No counterparty attestation" : `Counterparty attestation ${status}`;
    // One entry per attestation receipt, in bundle order: the n-th entry naming an id is the
    // n-th attestation receipt with it (never every receipt that repeats the id).
    const id = text(entry.receipt_id) ?? "";
    const seen = attestationsSeen.get(id) ?? 0;
    attestationsSeen.set(id, seen + 1);
    const sharing = (byReceiptId.get(id) ?? []).filter(
      (node) => node.type === "delivery.attestation",
    );
    sharing[Math.min(seen, sharing.length - 1)]?.marks.push({
      kind: "attestation",
      text: words,
      tone,
    });
  }
  const head = plainBundle.chain_head;
  const last = byWellFormed.at(-1);
  if (isPlainObject(head) && last !== undefined && text(head.receipt_id) === last.receiptId) {
    const anchored = isPlainObject(head.anchored) ? text(head.anchored.type) : null;
    last.marks.push({
      kind: "head",
      text:
        anchored === null ? "Declared chain head" : `Declared chain head, anchored (${anchored})`,
      tone: "neutral",
    });
  }

  attachFindings(model, nodes, byWellFormed, byReceiptId, result);
  onProgress(rawReceipts.length, rawReceipts.length);
  // Bundle order, which is the order the verifier checks the chain in (and names in its
  // details: `seq 0 != position 6`); in a sound chain it is seq order too.
  model.receipts = nodes;
  model.firstBroken =
    nodes.find((node) => node.findings.some((f) => f.kind === "error"))?.position ?? null;
  return model;
}

function allFindings(result: ResultLike): Finding[] {
  return [
    ...result.errors.map(
      (error): Finding => ({ kind: "error", code: error.code, detail: error.detail }),
    ),
    ...(result.insufficient_reasons ?? []).map((reason): Finding => {
      const [code, subject] = splitReason(reason);
      return { kind: "insufficient", code, detail: subject };
    }),
    ...(result.provisional_reasons ?? []).map((reason): Finding => {
      const [code, subject] = splitReason(reason);
      return { kind: "provisional", code, detail: subject };
    }),
  ];
}

const PATH = /(?:^|\s)receipts\[(\d+)\]/;

const POSITION = /(?:^|\s)position (\d+)$/;

/**
 * Each finding goes to the one receipt it names (by position, receipt id or path), else to
 * the bundle. Never to every receipt that shares an id: a bundle repeating its receipts
 * would otherwise carry each error once per repeat, the square of the repeats in all.
 *
 * Where several receipts share the id, the finding goes to the first of them at or after the
 * receipt the previous finding went to: the verifier reports receipt by receipt, in bundle
 * order, within each of its steps. (A detail naming a position, `seq 0 != position 6`, is
 * exact.)
 */
function attachFindings(
  model: ChainModel,
  nodes: ReceiptNode[],
  byWellFormed: ReceiptNode[],
  sharing: Map<string, ReceiptNode[]>,
  result: ResultLike,
) {
  let cursor = 0;
  const byId = (id: string | null): ReceiptNode[] => {
    const list = id === null ? undefined : sharing.get(id);
    if (list === undefined) return [];
    const next = list.find((node) => node.position >= cursor) ?? list[0]!;
    cursor = next.position;
    return [next];
  };
  const at = (position: number): ReceiptNode[] => {
    const node = nodes[position];
    if (node === undefined) return [];
    cursor = position;
    return [node];
  };
  for (const error of result.errors) {
    const finding: Finding = { kind: "error", code: error.code, detail: error.detail };
    let targets: ReceiptNode[] = [];
    const named = POSITION.exec(error.detail);
    if (named !== null && error.receipt_id !== null && error.receipt_id !== undefined) {
      targets = at(Number(named[1]));
    } else if (error.receipt_id !== null && error.receipt_id !== undefined) {
      targets = byId(text(error.receipt_id));
    } else {
      const position = /^receipt (\d+) is not an object$/.exec(error.detail);
      const path = PATH.exec(error.detail);
      const anchorTarget = /^anchor invalid for (.*)$/.exec(error.detail);
      if (position) targets = at(Number(position[1]));
      else if (path) targets = byWellFormed.slice(Number(path[1]), Number(path[1]) + 1);
      else if (anchorTarget) targets = byId(anchorTarget[1] ?? null);
    }
    if (targets.length === 0) model.bundleFindings.push(finding);
    for (const node of targets) node.findings.push(finding);
  }
  const reasons: [Finding["kind"], string[]][] = [
    ["insufficient", result.insufficient_reasons ?? []],
    ["provisional", result.provisional_reasons ?? []],
  ];
  for (const [kind, list] of reasons) {
    cursor = 0;
    for (const reason of list) {
      const [code, subject] = splitReason(reason);
      const finding: Finding = { kind, code, detail: subject };
      let targets: ReceiptNode[] = [];
      const path = subject === null ? null : PATH.exec(subject);
      if (path) targets = byWellFormed.slice(Number(path[1]), Number(path[1]) + 1);
      else targets = byId(subject);
      if (targets.length === 0) model.bundleFindings.push(finding);
      for (const node of targets) node.findings.push(finding);
    }
  }
}
