/** Loading the pinned conformance corpus (verifier.md §9.1–§9.2, service.md §10). */
import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  CorpusError,
  corpusLoader,
  HOSTILE_INDEX_PATH,
  loadCorpus,
  loadCorpusSummary,
  loadHostileCaseFiles,
  MANIFEST_PATHS,
} from "../../src/conformance/corpus.js";
import { CORPUS_DIR, corpusPath } from "../support/corpus.js";

/** The digests the public hosted referee publishes (service.md §10). */
const PINNED_SUMMARY = {
  bundles: {
    vectors: 40,
    manifest_digest: "sha256:eac2c24d88129f19efed9ecf3712d33a537e651ba964e524d0725b0aa8a618b3",
  },
  verification_receipts: {
    vectors: 21,
    manifest_digest: "sha256:e6ecb5b1ab65a6980260291f75c29af790a0fbdc660732fb086f4ffda0aad007",
  },
  hostile_inputs: {
    vectors: 208,
    manifest_digest: "sha256:2a6af64f34aa4904774398211c51e6d9de60980be675f6fe8f37d6725360aa03",
  },
};

let scratch: string;
let counter = 0;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "receiptd-corpus-test-"));
});
after(() => rm(scratch, { recursive: true, force: true }));

/** A fresh corpus directory holding the given files (relative path → bytes, or copied). */
async function corpusDir(files: Record<string, string | "copy">): Promise<string> {
  const dir = join(scratch, String(counter++));
  await mkdir(dir);
  for (const [relative, content] of Object.entries(files)) {
    const path = join(dir, relative);
    await mkdir(dirname(path), { recursive: true });
    if (content === "copy") await copyFile(corpusPath(relative), path);
    else await writeFile(path, content);
  }
  return dir;
}

describe("loadCorpusSummary", () => {
  test("../shared/corpus gives the hosted referee's digests and counts", async () => {
    assert.deepEqual(await loadCorpusSummary(CORPUS_DIR), PINNED_SUMMARY);
  });

  test("null when no manifest is deployed", async () => {
    assert.equal(await loadCorpusSummary(join(scratch, "does-not-exist")), null);
    assert.equal(await loadCorpusSummary(await corpusDir({})), null);
    assert.equal(await loadCorpusSummary(corpusPath("README.md")), null);
  });

  test("a partial deployment lists only the sections whose manifest is there", async () => {
    const dir = await corpusDir({ [MANIFEST_PATHS.verification_receipts]: "copy" });
    assert.deepEqual(await loadCorpusSummary(dir), {
      verification_receipts: PINNED_SUMMARY.verification_receipts,
    });
  });
});

describe("loadCorpus", () => {
  test("indexes what each section pins", async () => {
    const corpus = await loadCorpus(CORPUS_DIR);
    assert.ok(corpus !== null);
    assert.deepEqual(corpus.bundles?.vectors[2], {
      id: "03_tampered_body.json",
      verdict: "UNTRUSTED",
      code: "bad_signature",
      requireAnchor: false,
    });
    assert.deepEqual(corpus.bundles?.vectors[10], {
      id: "10b_anchor_missing.json",
      verdict: "PROVISIONAL",
      code: null,
      requireAnchor: true,
    });
    assert.equal(corpus.bundles?.vectors.filter((vector) => vector.requireAnchor).length, 1);
    // The manifest lists 06's codes unsorted; the index holds them sorted.
    assert.deepEqual(corpus.verification_receipts?.vectors[5], {
      id: "06_bad_version.json",
      valid: false,
      errors: ["bad_signature", "bad_version"],
      bundleFile: null,
      revocationsFile: null,
    });
    assert.deepEqual(corpus.verification_receipts?.vectors[11], {
      id: "12_revoked_issuer.json",
      valid: false,
      errors: ["key_revoked"],
      bundleFile: "bundle.json",
      revocationsFile: "12_revoked_issuer.revocations.json",
    });
    const hostile = corpus.hostile_inputs?.vectors ?? [];
    assert.deepEqual(hostile[0], {
      id: "repro.receipts[0]=null",
      verdict: "UNTRUSTED",
      codes: ["chain_break", "malformed", "malformed"],
    });
    assert.equal(hostile.filter((vector) => vector.verdict !== null).length, 8);
    assert.equal(hostile.filter((vector) => vector.codes !== null).length, 8);
    assert.deepEqual(hostile[8], { id: hostile[8]?.id, verdict: null, codes: null });
  });

  const broken: [string, string, string, RegExp][] = [
    ["not strict JSON", MANIFEST_PATHS.bundles, '{"vectors":[],"vectors":[]}', /Duplicate/i],
    ["not an object", MANIFEST_PATHS.bundles, "[]", /is not a JSON object/],
    ["vectors not a list", MANIFEST_PATHS.bundles, '{"vectors":{}}', /vectors is not a list/],
    [
      "an unknown verdict",
      MANIFEST_PATHS.bundles,
      '{"vectors":[{"file":"a.json","expected_verdict":"MAYBE","expected_code":null}]}',
      /vectors\[0\]\.expected_verdict is not one of/,
    ],
    [
      "a code that is not a string",
      MANIFEST_PATHS.bundles,
      '{"vectors":[{"file":"a.json","expected_verdict":"UNTRUSTED","expected_code":1}]}',
      /expected_code is neither a string nor null/,
    ],
    [
      "a repeated file",
      MANIFEST_PATHS.bundles,
      '{"vectors":[{"file":"a.json","expected_verdict":"TRUSTED","expected_code":null},' +
        '{"file":"a.json","expected_verdict":"TRUSTED","expected_code":null}]}',
      /a\.json is listed twice/,
    ],
    [
      "a validity that is not a boolean",
      MANIFEST_PATHS.verification_receipts,
      '{"vectors":[{"file":"r.json","expected_valid":1,"expected_errors":[]}]}',
      /expected_valid is not a boolean/,
    ],
    [
      "errors that are not strings",
      MANIFEST_PATHS.verification_receipts,
      '{"vectors":[{"file":"r.json","expected_valid":false,"expected_errors":[1]}]}',
      /expected_errors is not a list of strings/,
    ],
    [
      "a require_anchor that is not a boolean",
      MANIFEST_PATHS.bundles,
      '{"vectors":[{"file":"a.json","expected_verdict":"TRUSTED","expected_code":null,"require_anchor":1}]}',
      /vectors\[0\]\.require_anchor is not a boolean/,
    ],
    [
      "a companion file outside the receipt's folder",
      MANIFEST_PATHS.verification_receipts,
      '{"vectors":[{"file":"r.json","expected_valid":true,"expected_errors":[],"bundle_file":"../b.json"}]}',
      /vectors\[0\]\.bundle_file is not a file name/,
    ],
    [
      "a requirement the referee does not know",
      MANIFEST_PATHS.hostile_inputs,
      '{"vectors":[{"case":"c","require":"exit_zero"}]}',
      /require is not "structured"/,
    ],
    [
      "a case without a label",
      MANIFEST_PATHS.hostile_inputs,
      '{"vectors":[{"case":"","require":"structured"}]}',
      /vectors\[0\]\.case is not a non-empty string/,
    ],
  ];
  for (const [name, relative, content, message] of broken) {
    test(`a manifest with ${name} is a CorpusError naming the file`, async () => {
      const dir = await corpusDir({ [relative]: content });
      await assert.rejects(
        loadCorpus(dir),
        (error: unknown) =>
          error instanceof CorpusError &&
          error.message.startsWith(join(dir, relative)) &&
          message.test(error.message),
      );
    });
  }
});

describe("loadHostileCaseFiles", () => {
  test("maps every case of the pinned manifest to its input file", async () => {
    const files = await loadHostileCaseFiles(CORPUS_DIR);
    const corpus = await loadCorpus(CORPUS_DIR);
    const cases = corpus?.hostile_inputs?.vectors.map((vector) => vector.id) ?? [];
    assert.equal(cases.length, 208);
    assert.deepEqual(
      cases.filter((label) => !files.has(label)),
      [],
    );
    assert.equal(files.get("repro.receipts[0]=null"), join("hostile", "cases", "000.json"));
  });

  const refused: [string, string, RegExp][] = [
    ["absent", "", /hostile\/index\.json: not found/],
    ["without cases", '{"cases":{}}', /cases is not a list/],
    [
      "with a file outside cases/",
      '{"cases":[{"case":"c","file":"../x.json"}]}',
      /not a file under cases\//,
    ],
    [
      "with a case twice",
      '{"cases":[{"case":"c","file":"cases/1.json"},{"case":"c","file":"cases/2.json"}]}',
      /c is listed twice/,
    ],
  ];
  for (const [name, content, message] of refused) {
    test(`an index ${name} is a CorpusError`, async () => {
      const dir = await corpusDir(content === "" ? {} : { [HOSTILE_INDEX_PATH]: content });
      await assert.rejects(
        loadHostileCaseFiles(dir),
        (error: unknown) => error instanceof CorpusError && message.test(error.message),
      );
    });
  }
});

describe("corpusLoader", () => {
  test("no directory configured → null", async () => {
    assert.equal(await corpusLoader(null)(), null);
  });

  test("loads once, then serves the same index", async () => {
    const load = corpusLoader(CORPUS_DIR);
    const first = await load();
    assert.ok(first !== null);
    assert.equal(await load(), first);
  });

  test("a corpus missing or broken at first is found once it is deployed", async () => {
    const dir = await corpusDir({});
    const load = corpusLoader(dir);
    assert.equal(await load(), null);
    const path = join(dir, MANIFEST_PATHS.bundles);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, "{");
    await assert.rejects(load(), CorpusError);
    await copyFile(corpusPath(MANIFEST_PATHS.bundles), path);
    const corpus = await load();
    assert.equal(corpus?.bundles?.vectors.length, 40);
    assert.equal(corpus?.hostile_inputs, undefined);
  });
});
