/**
 * What the Bundle tab shows of one verification, computed where the verification runs (the
 * page's Web Worker, worker.ts) so that the page's thread only draws: the CLI's output, the
 * chain model, and the findings grouped by code. Its size follows what a person can read,
 * not the bundle: a group names its first receipts and counts the rest, lists are cut short
 * with a count of what was left out.
 *
 * No DOM: the tests run it under Node.
 */
import { type BundleOptions, verifyBundleJson } from "./api.js";
import {
  buildChainModel,
  type ChainModel,
  type Finding,
  type ModelProgress,
  type ResultLike,
} from "./chain-model.js";
import { PREVIEW_CHARS } from "./dom.js";

/** Receipts a finding group names by number; the others are counted. */
export const NAMED_RECEIPTS = 8;
/** Distinct details a finding group quotes; the others are counted. */
export const QUOTED_DETAILS = 3;
/** Entries of a summary list shown; the others are counted. */
export const SUMMARY_ENTRIES = 12;

export interface FindingGroup {
  kind: Finding["kind"];
  code: string;
  /** How many times the verifier reported it. */
  count: number;
  /** The first distinct details, each with how often it came. */
  details: { detail: string; count: number }[];
  /** Distinct details not quoted. */
  moreDetails: number;
  /** Positions of the first receipts it is attached to, in bundle order. */
  receipts: number[];
  /** How many distinct receipts it is attached to in all. */
  receiptCount: number;
}

export interface SummaryRow {
  term: string;
  /** Plain values; `dids` are shown shortened. */
  values: string[];
  dids: boolean;
  /** Values not shown. */
  more: number;
}

export interface BundleView {
  verdict: string;
  errorCount: number;
  reasonCount: number;
  groups: FindingGroup[];
  chain: ChainModel;
  summary: SummaryRow[];
  /** The CLI's output, cut to PREVIEW_CHARS (dom.ts), and its full length in UTF-8 bytes. */
  preview: string;
  previewCut: boolean;
  resultBytes: number;
}

export interface VerifiedBundle {
  /** Exactly what `continuity-receipt-verify` prints. */
  text: string;
  view: BundleView;
}

export type VerifyPhase = "verifying" | "drawing";

export type ViewProgress = (phase: VerifyPhase, done: number, total: number) => void;

/** Verifies `bundle` as the CLI does and prepares what the Bundle tab draws of it. */
export function verifyBundleView(
  bundle: Uint8Array,
  options: BundleOptions,
  onProgress: ViewProgress = () => {},
): VerifiedBundle {
  onProgress("verifying", 0, 0);
  const text = verifyBundleJson(bundle, options);
  const result = JSON.parse(text) as ResultLike;
  const progress: ModelProgress = (done, total) => onProgress("drawing", done, total);
  const chain = buildChainModel(bundle, result, progress);
  return {
    text,
    view: {
      verdict: result.verdict,
      errorCount: result.errors.length,
      reasonCount:
        (result.provisional_reasons?.length ?? 0) + (result.insufficient_reasons?.length ?? 0),
      groups: groupFindings(chain),
      chain,
      summary: summaryRows(result.summary),
      preview: text.slice(0, PREVIEW_CHARS),
      previewCut: text.length > PREVIEW_CHARS,
      resultBytes: new TextEncoder().encode(text).length,
    },
  };
}

const KIND_ORDER: Record<Finding["kind"], number> = { error: 0, insufficient: 1, provisional: 2 };

/** One group per kind and code, in the order the verifier first reported each. */
export function groupFindings(chain: ChainModel): FindingGroup[] {
  const groups = new Map<
    string,
    FindingGroup & { allDetails: Map<string, number>; receiptSet: Set<number> }
  >();
  const add = (finding: Finding, position: number | null) => {
    const key = `${finding.kind} ${finding.code}`;
    let group = groups.get(key);
    if (group === undefined) {
      group = {
        kind: finding.kind,
        code: finding.code,
        count: 0,
        details: [],
        moreDetails: 0,
        receipts: [],
        receiptCount: 0,
        allDetails: new Map(),
        receiptSet: new Set(),
      };
      groups.set(key, group);
    }
    group.count += 1;
    if (finding.detail !== null) {
      group.allDetails.set(finding.detail, (group.allDetails.get(finding.detail) ?? 0) + 1);
    }
    if (position !== null && !group.receiptSet.has(position)) {
      group.receiptSet.add(position);
      if (group.receipts.length < NAMED_RECEIPTS) group.receipts.push(position);
    }
  };
  for (const node of chain.receipts) {
    for (const finding of node.findings) add(finding, node.position);
  }
  for (const finding of chain.bundleFindings) add(finding, null);
  return [...groups.values()]
    .map(({ allDetails, receiptSet, ...group }) => {
      const details = [...allDetails].map(([detail, count]) => ({ detail, count }));
      return {
        ...group,
        details: details.slice(0, QUOTED_DETAILS),
        moreDetails: Math.max(0, details.length - QUOTED_DETAILS),
        receiptCount: receiptSet.size,
      };
    })
    .sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

function cut(term: string, values: string[], dids = false): SummaryRow {
  return {
    term,
    values: values.slice(0, SUMMARY_ENTRIES),
    dids,
    more: Math.max(0, values.length - SUMMARY_ENTRIES),
  };
}

/** The summary as rows of the page's table, long lists cut short. */
export function summaryRows(summary: Record<string, unknown> | undefined): SummaryRow[] {
  if (summary === undefined) return [];
  const rows: SummaryRow[] = [];
  const one = (term: string, value: string) => rows.push(cut(term, [value]));
  if (summary.receipts !== undefined) one("Receipts", String(summary.receipts));
  if (Array.isArray(summary.issuers)) {
    rows.push(
      summary.issuers.length === 0
        ? cut("Issuers", ["none"])
        : cut("Issuers", summary.issuers.map(String), true),
    );
  }
  if (summary.terminated !== undefined) one("Terminated", summary.terminated ? "yes" : "no");
  if (summary.settled !== undefined) one("Settled", summary.settled ? "yes" : "no");
  if (Array.isArray(summary.anchors)) rows.push(cut("Anchors", summary.anchors.map(String)));
  if (summary.revocations_checked !== undefined)
    one("Revocation statements checked", String(summary.revocations_checked));
  if (summary.revocations_external !== undefined)
    one("External revocation statements", String(summary.revocations_external));
  if (typeof summary.chain_head === "object" && summary.chain_head !== null) {
    const head = summary.chain_head as Record<string, unknown>;
    one("Chain head", `seq ${String(head.seq)}, anchored (${String(head.anchored)})`);
  }
  if (Array.isArray(summary.attestations)) {
    rows.push(
      cut(
        "Counterparty attestations",
        summary.attestations.map((a) => String((a as Record<string, unknown>).attestation)),
      ),
    );
  }
  return rows;
}
