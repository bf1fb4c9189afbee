/** `POST /verify-receipt` (service.md §1, verifier.md §6.2), driven through `app.inject()`. */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadAndMergeRevocations } from "../../../../src/io/revocation-sources.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import {
  buildRevocationDocument,
  parseRevocationDocument,
} from "../../../../src/verifier/revocations/document.js";
import { verifyVerificationReceipt } from "../../../../src/verifier/verification-receipt/index.js";
import { corpusBytes, corpusManifest } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const SERVICE = "continuity-receipt-verify";
const BUNDLE = corpusBytes("vectors/verification/bundle.json");
const OTHER_BUNDLE = corpusBytes("vectors/verification/other_bundle.json");
const CORPUS_RECEIPT = corpusBytes("vectors/verification/01_valid.json");
const REVOKED_RECEIPT = corpusBytes("vectors/verification/12_revoked_issuer.json");
/** The issuer's key revoked before the receipt's `verified_at`. */
const REVOKED_DOCUMENT = corpusBytes("vectors/verification/12_revoked_issuer.revocations.json");
/** The same key revoked after it. */
const LATER_DOCUMENT = corpusBytes(
  "vectors/verification/21_valid_statement_after_verified_at.revocations.json",
);
const CORPUS_ISSUER = "did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK";
const CORPUS_BUNDLE_DIGEST =
  "sha256:0ea854078244673a93249ac2c3df35aff6dfa71602bdc556a2887da2b1a59de9";

interface ReceiptCheck {
  valid: boolean;
  errors: string[];
  issuer: unknown;
  verdict: unknown;
  verified_at: unknown;
  bundle_digest: unknown;
  digest_match: boolean | null;
  service: string;
}

interface ManifestEntry {
  file: string;
  expected_valid: boolean;
  expected_errors: string[];
  bundle_file?: string;
  revocations_file?: string;
}

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");

/** A wrapped body; members are raw JSON text, so receipts go in byte for byte. */
function wrapped(members: Record<string, string>): string {
  const parts = Object.entries(members).map(([name, json]) => `${JSON.stringify(name)}:${json}`);
  return `{${parts.join(",")}}`;
}

describe("POST /verify-receipt", () => {
  let service: TestService;
  const post = (payload: Buffer | string) =>
    service.app.inject({
      method: "POST",
      url: "/verify-receipt",
      headers: { "content-type": "application/json" },
      payload,
    });
  const check = async (payload: Buffer | string): Promise<ReceiptCheck> => {
    const response = await post(payload);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    return response.json<ReceiptCheck>();
  };
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  describe("receipts issued by POST /verify?receipt=1", () => {
    let receipt: string;
    before(async () => {
      const response = await service.app.inject({
        method: "POST",
        url: "/verify?receipt=1",
        payload: BUNDLE,
      });
      assert.equal(response.statusCode, 200);
      receipt = JSON.stringify(response.json().verification_receipt);
    });

    test("verify bare, with digest_match null", async () => {
      const result = await check(receipt);
      assert.equal(result.valid, true);
      assert.deepEqual(result.errors, []);
      assert.equal(result.issuer, service.app.serviceIdentity.signer().did);
      assert.equal(result.verdict, "TRUSTED");
      assert.match(String(result.verified_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(result.bundle_digest, CORPUS_BUNDLE_DIGEST);
      assert.equal(result.digest_match, null);
      assert.equal(result.service, SERVICE);
      assert.deepEqual(Object.keys(result), [
        "valid",
        "errors",
        "issuer",
        "verdict",
        "verified_at",
        "bundle_digest",
        "digest_match",
        "service",
      ]);
    });

    test("match the bundle given as bytes or as an object", async () => {
      for (const body of [
        wrapped({ receipt, bundle_bytes_b64: JSON.stringify(b64(BUNDLE)) }),
        wrapped({ receipt, bundle: BUNDLE.toString("utf8") }),
      ]) {
        const result = await check(body);
        assert.equal(result.valid, true);
        assert.equal(result.digest_match, true);
      }
    });

    test("do not match another bundle", async () => {
      const result = await check(
        wrapped({ receipt, bundle_bytes_b64: JSON.stringify(b64(OTHER_BUNDLE)) }),
      );
      assert.equal(result.valid, false);
      assert.deepEqual(result.errors, ["bundle_digest_mismatch"]);
      assert.equal(result.digest_match, false);
    });

    test("tampered ones do not verify", async () => {
      const untrusted = receipt.replace('"verdict":"TRUSTED"', '"verdict":"UNTRUSTED"');
      assert.notEqual(untrusted, receipt);
      const result = await check(wrapped({ receipt: untrusted, bundle: BUNDLE.toString() }));
      assert.equal(result.valid, false);
      assert.deepEqual(result.errors, ["verdict_mismatch", "bad_signature"]);
      assert.equal(result.verdict, "UNTRUSTED");
      assert.equal(result.digest_match, true);

      const redated = receipt.replace(
        /"verified_at":"[^"]+"/,
        '"verified_at":"2020-01-01T00:00:00Z"',
      );
      assert.deepEqual((await check(redated)).errors, ["bad_signature"]);
    });
  });

  describe("the corpus vectors give the library's answers", () => {
    const manifest = corpusManifest<{ vectors: ManifestEntry[] }>(
      "vectors/verification/manifest.json",
    );
    for (const entry of manifest.vectors) {
      test(entry.file, async () => {
        const receipt = corpusBytes(`vectors/verification/${entry.file}`);
        const bundle =
          entry.bundle_file === undefined
            ? undefined
            : corpusBytes(`vectors/verification/${entry.bundle_file}`);
        const revocations =
          entry.revocations_file === undefined
            ? undefined
            : parseRevocationDocument(
                corpusBytes(`vectors/verification/${entry.revocations_file}`),
              );
        const members: Record<string, string> = { receipt: receipt.toString("utf8") };
        if (bundle !== undefined) members.bundle_bytes_b64 = JSON.stringify(b64(bundle));
        if (revocations !== undefined) members.revocations = dumpCompact(revocations);

        const result = await check(wrapped(members));
        const library = verifyVerificationReceipt(parseJson(receipt), { bundle, revocations });
        assert.deepEqual(result, { ...JSON.parse(dumpCompact(library)), service: SERVICE });
        if (entry.revocations_file !== undefined) {
          // The document itself, as the CLI's --revocations reads it, gives the same answer.
          const document = corpusBytes(`vectors/verification/${entry.revocations_file}`);
          members.revocations = document.toString("utf8");
          assert.deepEqual(await check(wrapped(members)), result);
        }
        const expected = JSON.parse(
          corpusBytes(`expected/verification/${entry.file}`).toString("utf8"),
        );
        assert.deepEqual(result, { ...expected, service: SERVICE });
        assert.equal(result.valid, entry.expected_valid);
        assert.deepEqual([...result.errors].sort(), [...entry.expected_errors].sort());
      });
    }
  });

  describe("telling the two forms apart", () => {
    test("a bare receipt is checked as it is", async () => {
      const result = await check(CORPUS_RECEIPT);
      assert.equal(result.valid, true);
      assert.equal(result.issuer, CORPUS_ISSUER);
      assert.equal(result.digest_match, null);
    });

    test("an object with both kind and receipt is a receipt, not a wrapper", async () => {
      const text = CORPUS_RECEIPT.toString("utf8").replace("{", '{"receipt":{},');
      const result = await check(text);
      assert.deepEqual(result.errors, ["bad_signature"]);
    });

    test("a receipt without kind, wrapped or not, is checked and fails bad_kind", async () => {
      const text = CORPUS_RECEIPT.toString("utf8").replace(
        '"kind": "continuity-receipt-verification",',
        "",
      );
      assert.notEqual(text, CORPUS_RECEIPT.toString("utf8"));
      assert.deepEqual((await check(text)).errors, ["bad_kind", "bad_signature"]);
      assert.deepEqual((await check(wrapped({ receipt: text }))).errors, [
        "bad_kind",
        "bad_signature",
      ]);
    });

    test("a body or receipt that is not an object → 200 not_an_object", async () => {
      for (const body of ["[]", '"receipt"', "null", wrapped({ receipt: "[1]" })]) {
        assert.deepEqual(await check(body), {
          valid: false,
          errors: ["not_an_object"],
          issuer: null,
          verdict: null,
          verified_at: null,
          bundle_digest: null,
          digest_match: null,
          service: SERVICE,
        });
      }
    });

    test("revocations: an empty list checks nothing; a junk statement is bad_revocation", async () => {
      const receipt = CORPUS_RECEIPT.toString("utf8");
      assert.deepEqual((await check(wrapped({ receipt, revocations: "[]" }))).errors, []);
      assert.deepEqual((await check(wrapped({ receipt, revocations: '["junk"]' }))).errors, [
        "bad_revocation",
      ]);
    });
  });

  describe("revocations as documents: what GET /revocations/{issuer} serves, fed back", () => {
    const receipt = REVOKED_RECEIPT.toString("utf8");
    const bundleBytes = JSON.stringify(b64(BUNDLE));
    let served: string;
    before(async () => {
      await service.app.documentStore.create("revocations", CORPUS_ISSUER, REVOKED_DOCUMENT);
      const response = await service.app.inject({
        method: "GET",
        url: `/revocations/${CORPUS_ISSUER}`,
      });
      assert.equal(response.statusCode, 200, response.body);
      served = response.body;
    });
    const checkWith = (revocations: string) =>
      check(wrapped({ receipt, bundle_bytes_b64: bundleBytes, revocations }));

    test("statements, the served document, a list of documents: one answer", async () => {
      const statements = await checkWith(dumpCompact(parseRevocationDocument(REVOKED_DOCUMENT)));
      assert.deepEqual(statements.errors, ["key_revoked"]);
      for (const revocations of [served, `[${served}]`, `[${served},${served}]`]) {
        assert.deepEqual(await checkWith(revocations), statements, revocations);
      }
    });

    test("documents give the answer the CLI's --revocations gives for the same files", async () => {
      const dir = await mkdtemp(join(tmpdir(), "verify-receipt-revocations-"));
      try {
        const servedFile = join(dir, "served.json");
        await writeFile(servedFile, served);
        const laterFile = join(dir, "later.json");
        await writeFile(laterFile, LATER_DOCUMENT);
        const emptyFile = join(dir, "empty.json");
        const empty = dumpCompact(buildRevocationDocument([]));
        await writeFile(emptyFile, empty);
        const texts = new Map([
          [servedFile, served],
          [laterFile, LATER_DOCUMENT.toString("utf8")],
          [emptyFile, empty],
        ]);
        for (const files of [
          [servedFile],
          [laterFile],
          [emptyFile],
          [servedFile, laterFile],
          [laterFile, servedFile, servedFile],
          [emptyFile, laterFile],
        ]) {
          const cli = verifyVerificationReceipt(parseJson(REVOKED_RECEIPT), {
            bundle: BUNDLE,
            revocations: await loadAndMergeRevocations(files),
          });
          const expected = { ...JSON.parse(dumpCompact(cli)), service: SERVICE };
          const documents = files.map((file) => texts.get(file));
          assert.deepEqual(await checkWith(`[${documents.join(",")}]`), expected, files.join());
          if (files.length === 1) assert.deepEqual(await checkWith(documents[0] ?? ""), expected);
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe("refusals", () => {
    const receipt = CORPUS_RECEIPT.toString("utf8");
    const refusals: [string, string, object][] = [
      [
        "a body that is not strict JSON",
        '{"receipt":{},"receipt":{}}',
        { error: "invalid_json", detail: "duplicate JSON object member: 'receipt'" },
      ],
      [
        "an unknown wrapper member",
        wrapped({ receipt, revocation: "[]" }),
        { error: "bad_shape", detail: "body has an unexpected member 'revocation'" },
      ],
      [
        "a bundle that is not an object",
        wrapped({ receipt, bundle: "[]" }),
        { error: "bad_shape", detail: "body/bundle must be object" },
      ],
      [
        "revocations that are neither a list nor a document",
        wrapped({ receipt, revocations: '"https://example.com/revocations.json"' }),
        { error: "bad_shape", detail: "body/revocations must be array,object" },
      ],
      [
        "a list mixing documents and statements",
        wrapped({
          receipt,
          revocations: `[${REVOKED_DOCUMENT},${dumpCompact(parseRevocationDocument(REVOKED_DOCUMENT)[0] ?? null)}]`,
        }),
        {
          error: "bad_shape",
          detail:
            "revocations must be a list of statements or a list of revocation documents, not both",
        },
      ],
      [
        "an object that is not a revocation document",
        wrapped({ receipt, revocations: "{}" }),
        {
          error: "bad_revocations_document",
          detail: "revocations: kind is None, expected 'continuity-receipt-revocations'",
        },
      ],
      [
        "a document of another version",
        wrapped({
          receipt,
          revocations: '{"kind":"continuity-receipt-revocations","version":2,"statements":[]}',
        }),
        { error: "bad_revocations_document", detail: "revocations: version is 2, expected 1" },
      ],
      [
        "a list holding a document whose statements are not a list",
        wrapped({
          receipt,
          revocations: `[${REVOKED_DOCUMENT},{"kind":"continuity-receipt-revocations","version":1,"statements":{}}]`,
        }),
        { error: "bad_revocations_document", detail: "revocations[1]: statements is not a list" },
      ],
      [
        "bundle_bytes_b64 that is not a string",
        wrapped({ receipt, bundle_bytes_b64: "1" }),
        { error: "bad_shape", detail: "body/bundle_bytes_b64 must be string" },
      ],
      [
        "both bundle and bundle_bytes_b64",
        wrapped({ receipt, bundle: "{}", bundle_bytes_b64: JSON.stringify(b64("{}")) }),
        { error: "ambiguous_bundle", detail: "give bundle or bundle_bytes_b64, not both" },
      ],
    ];
    for (const [name, body, expected] of refusals) {
      test(`${name} → 400`, async () => {
        const response = await post(body);
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json(), expected);
      });
    }

    const notBase64 =
      "bundle_bytes_b64 is not standard base64 (RFC 4648 §4, padded, no whitespace)";
    const badBytes: [string, string, string][] = [
      ["unpadded base64", b64("{}").replace(/=+$/, ""), notBase64],
      [
        "base64url",
        b64(Buffer.from([0xfb, 0xff, 0xfe]))
          .replace("+", "-")
          .replace("/", "_"),
        notBase64,
      ],
      ["a line break", `${b64(BUNDLE).slice(0, 76)}\n${b64(BUNDLE).slice(76)}`, notBase64],
      ["non-zero pad bits", "e30=".replace("0=", "1="), notBase64],
      ["nothing", "", "bundle bytes are not valid JSON: Expecting value: line 1 column 1 (char 0)"],
      [
        "bytes that are not JSON",
        b64("{"),
        "bundle bytes are not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
      ],
      [
        "a UTF-8 BOM",
        b64(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), BUNDLE])),
        "bundle bytes are not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
      ],
      ["JSON that is not an object", b64("[]"), "bundle bytes do not hold a JSON object"],
    ];
    for (const [name, value, detail] of badBytes) {
      test(`bundle_bytes_b64 with ${name} → 400 bad_bundle_bytes`, async () => {
        const response = await post(wrapped({ receipt, bundle_bytes_b64: JSON.stringify(value) }));
        assert.equal(response.statusCode, 400);
        assert.deepEqual(response.json(), { error: "bad_bundle_bytes", detail });
      });
    }
  });
});
