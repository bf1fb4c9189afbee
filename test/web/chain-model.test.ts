/**
 * The chain picture's model (src/web/chain-model.ts) on corpus bundles: receipts in bundle
 * order, links, marks, and each finding on the one receipt it names.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { repeatedReceiptsBundle } from "../../bench/support/large-bundles.js";
import { verifyBundleJson } from "../../src/web/api.js";
import { buildChainModel, type ChainModel, type ResultLike } from "../../src/web/chain-model.js";
import { corpusBytes } from "../support/corpus.js";

function model(vector: string, options = {}): ChainModel {
  const bytes = corpusBytes(`vectors/${vector}`);
  return buildChainModel(bytes, JSON.parse(verifyBundleJson(bytes, options)) as ResultLike);
}

const codes = (chain: ChainModel) => chain.receipts.map((node) => node.findings.map((f) => f.code));
const marks = (chain: ChainModel) =>
  chain.receipts.flatMap((node) => node.marks.map((m) => `${node.seq}:${m.kind}`));

describe("the receipt chain model", () => {
  test("a trusted bundle: every link intact, no finding", () => {
    const chain = model("02_happy_full.json");
    assert.deepEqual(
      chain.receipts.map((node) => node.seq),
      ["0", "1", "2", "3", "4", "5"],
    );
    assert.deepEqual(
      chain.receipts.map((node) => node.link),
      ["first", "intact", "intact", "intact", "intact", "intact"],
    );
    assert.deepEqual(
      chain.receipts.slice(1).map((node) => node.prevPointsTo),
      [0, 1, 2, 3, 4],
    );
    assert.equal(chain.firstBroken, null);
    assert.deepEqual(chain.bundleFindings, []);
    assert.deepEqual(marks(chain), ["3:attestation", "4:settlement", "5:termination"]);
  });

  test("a tampered body: the signature fails on #2, the link after it breaks, #2 is where it broke", () => {
    const chain = model("03_tampered_body.json");
    assert.deepEqual(codes(chain), [[], [], ["bad_signature"], ["chain_break"]]);
    assert.equal(chain.receipts[3]!.link, "broken");
    assert.equal(chain.receipts[3]!.prevPointsTo, null);
    assert.equal(chain.firstBroken, 2);
  });

  test("redactions: undisclosed, disclosed and erased, with their reasons on the receipt", () => {
    assert.deepEqual(codes(model("07_redacted_no_disclosure.json"))[3], [
      "redacted_without_disclosure",
    ]);
    assert.ok(marks(model("07_redacted_no_disclosure.json")).includes("3:redaction"));
    assert.ok(marks(model("08_redacted_disclosed.json")).includes("3:disclosure"));
    const erased = model("09_erased_content.json");
    assert.deepEqual(codes(erased)[3], ["erased_content"]);
    assert.ok(marks(erased).includes("3:erasure"));
    assert.equal(erased.firstBroken, null);
  });

  test("offers, acceptances, grants, anchors and the chain head are marked", () => {
    const offer = marks(model("16_offer_accept.json"));
    assert.ok(
      offer.some((mark) => mark.endsWith(":offer")) &&
        offer.some((mark) => mark.endsWith(":acceptance")),
      offer.join(),
    );
    const agreement = marks(model("17_agreement_bound.json"));
    assert.ok(
      agreement.some((mark) => mark.endsWith(":agreement")),
      agreement.join(),
    );
    const grant = marks(model("24_authority_grant.json"));
    assert.ok(
      grant.some((mark) => mark.endsWith(":grant")) &&
        grant.some((mark) => mark.endsWith(":authority")),
      grant.join(),
    );
    assert.ok(marks(model("25f_head_anchor_valid.json")).some((mark) => mark.endsWith(":head")));
    assert.ok(
      marks(model("13_attestation_valid.json")).some((mark) => mark.endsWith(":attestation")),
    );
    const anchored = model("10a_anchor_invalid.json");
    assert.ok(
      anchored.receipts.some((node) => node.findings.some((f) => f.code === "anchor_invalid")),
    );
  });

  test("bundle-level findings stay with the bundle; a bundle that is not JSON is not drawn", () => {
    const missing = model("04_missing_termination.json");
    assert.deepEqual(
      missing.bundleFindings.map((f) => f.code),
      ["missing_termination"],
    );
    const anchor = model("02_happy_full.json", { requireAnchor: true });
    assert.deepEqual(
      anchor.bundleFindings.map((f) => [f.kind, f.code]),
      [["provisional", "anchor_missing"]],
    );
    const junk = buildChainModel(Buffer.from("{"), JSON.parse(verifyBundleJson("{")) as ResultLike);
    assert.equal(junk.drawn, false);
    assert.deepEqual(
      junk.bundleFindings.map((f) => f.code),
      ["malformed"],
    );
  });

  test("repeated receipts: each error and attestation on one receipt, never on every repeat", () => {
    const bytes = repeatedReceiptsBundle(60);
    const result = JSON.parse(verifyBundleJson(bytes)) as ResultLike;
    const chain = buildChainModel(bytes, result);
    assert.deepEqual(
      chain.receipts.map((node) => node.position),
      Array.from({ length: 60 }, (_, i) => i),
    );
    const attached = chain.receipts.reduce((sum, node) => sum + node.findings.length, 0);
    assert.equal(attached + chain.bundleFindings.length, result.errors.length);
    assert.equal(chain.firstBroken, 6);
    assert.deepEqual(
      chain.receipts[6]!.findings.map((f) => f.detail),
      ["seq 0 != position 6", "prev digest mismatch"],
    );
    assert.deepEqual(
      chain.receipts[7]!.findings.map((f) => f.detail),
      ["seq 1 != position 7"],
    );
    assert.deepEqual(chain.receipts[0]!.findings, []);
    // Every repeat of the delivery receipt (#3, #9, …) has its own attestation mark, once.
    const attestations = chain.receipts.map(
      (node) => node.marks.filter((mark) => mark.kind === "attestation").length,
    );
    assert.deepEqual(
      attestations,
      chain.receipts.map((node) => (node.type === "delivery.attestation" ? 1 : 0)),
    );
  });
});
