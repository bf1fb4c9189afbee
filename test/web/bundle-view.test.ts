/**
 * What the Bundle tab draws of a verification (src/web/bundle-view.ts, computed in the page's
 * worker): the CLI's text unchanged, findings grouped by code with counts and the first
 * receipts they name, and a size that follows what a person reads, not the bundle.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { repeatedReceiptsBundle } from "../../bench/support/large-bundles.js";
import { verifyBundleJson } from "../../src/web/api.js";
import {
  NAMED_RECEIPTS,
  QUOTED_DETAILS,
  SUMMARY_ENTRIES,
  summaryRows,
  verifyBundleView,
} from "../../src/web/bundle-view.js";
import { PREVIEW_CHARS } from "../../src/web/dom.js";
import { corpusBytes } from "../support/corpus.js";

describe("the Bundle tab's view of a verification", () => {
  test("the text is the CLI's; a small result is shown whole", () => {
    const bytes = corpusBytes("vectors/03_tampered_body.json");
    const { text, view } = verifyBundleView(bytes, { requireAnchor: false });
    assert.equal(text, verifyBundleJson(bytes));
    assert.equal(view.preview, text);
    assert.equal(view.previewCut, false);
    assert.equal(view.resultBytes, Buffer.byteLength(text));
    assert.deepEqual(
      view.groups.map((group) => [group.code, group.count, group.receipts]),
      [
        ["bad_signature", 1, [2]],
        ["chain_break", 1, [3]],
      ],
    );
  });

  test("2,000 repeated receipts: one group with the count, its first receipts and details", () => {
    const bytes = repeatedReceiptsBundle(2000);
    const phases = new Set<string>();
    const { text, view } = verifyBundleView(bytes, {}, (phase) => phases.add(phase));
    assert.deepEqual([...phases], ["verifying", "drawing"]);
    const errors = (JSON.parse(text) as { errors: unknown[] }).errors.length;
    assert.equal(view.errorCount, errors);
    assert.equal(view.groups.length, 1);
    const [group] = view.groups;
    assert.equal(group!.code, "chain_break");
    assert.equal(group!.count, errors);
    assert.equal(group!.receiptCount, 1994, "#6 to #1999, each once");
    assert.deepEqual(
      group!.receipts,
      Array.from({ length: NAMED_RECEIPTS }, (_, i) => 6 + i),
    );
    assert.equal(group!.details.length, QUOTED_DETAILS);
    assert.deepEqual(group!.details[0], { detail: "seq 0 != position 6", count: 1 });
    assert.ok(group!.moreDetails > 1000);
    assert.equal(view.preview.length, PREVIEW_CHARS);
    assert.equal(view.previewCut, true);
    assert.ok(text.startsWith(view.preview));
  });

  test("summary lists are cut short, with the count of the rest", () => {
    const issuers = Array.from({ length: 40 }, (_, i) => `did:key:z${i}`);
    const rows = summaryRows({ receipts: 40, issuers, attestations: [] });
    assert.deepEqual(rows[0], { term: "Receipts", values: ["40"], dids: false, more: 0 });
    assert.equal(rows[1]!.values.length, SUMMARY_ENTRIES);
    assert.equal(rows[1]!.more, 40 - SUMMARY_ENTRIES);
    assert.equal(rows[1]!.dids, true);
  });
});
