/** `receiptd revocations import FILE` (service.md §3): validate, split per issuer, merge, store. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/revocations.js";
import { readRevocationDocument } from "../../src/revocations/documents.js";
import { buildApp } from "../../src/service/app.js";
import { loadConfig } from "../../src/service/config.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { ed25519Signature, signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { canonicalBytes, canonicalText } from "../../src/verifier/json/canonical.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { type JsonObject, type JsonValue, jsonObject } from "../../src/verifier/json/value.js";
import {
  buildRevocationDocument,
  MAX_REVOCATION_DOCUMENT_BYTES,
  parseRevocationDocument,
  signRevocationStatement,
} from "../../src/verifier/revocations/document.js";
import { corpusBytes, corpusPath } from "../support/corpus.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const CORPUS_FILE = "vectors/verification/12_revoked_issuer.revocations.json";
const CORPUS_ISSUER = "did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK";

const alice = signerFromSeed(new Uint8Array(32).fill(21));
const bob = signerFromSeed(new Uint8Array(32).fill(22));

function statementBy(signer = alice, revokedAt = "2030-01-01T00:00:00Z"): JsonObject {
  return signRevocationStatement(signer, { revokedAt, reason: "compromised" });
}

function documentOf(...statements: JsonValue[]): string {
  return dumpCompact(buildRevocationDocument(statements, "2030-01-02T00:00:00Z"));
}

/** Statements compared by their canonical text (they are Maps). */
function texts(statements: readonly JsonValue[]): string[] {
  return statements.map((statement) => canonicalText(statement));
}

describe("receiptd revocations import", () => {
  let workDir: string;
  let dataDir: string;
  let fileCount = 0;
  let testCount = 0;

  async function run(...argv: string[]) {
    let stdout = "";
    let stderr = "";
    const code = await main(
      argv,
      { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
      { DATA_DIR: dataDir },
    );
    return { code, stdout, stderr };
  }

  async function fileWith(content: string | Uint8Array): Promise<string> {
    fileCount += 1;
    const path = join(workDir, `document-${fileCount}.json`);
    await writeFile(path, content);
    return path;
  }

  async function stored(issuer: string): Promise<Uint8Array | null> {
    return new FsDocumentStore(dataDir).get("revocations", issuer);
  }

  async function storedStatements(issuer: string): Promise<JsonValue[]> {
    const read = await readRevocationDocument(new FsDocumentStore(dataDir), issuer);
    assert.equal(read.status, "found");
    return read.status === "found" ? parseRevocationDocument(read.bytes) : [];
  }

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), "receiptd-revocations-import-"));
  });
  after(() => rm(workDir, { recursive: true, force: true }));
  beforeEach(async () => {
    testCount += 1;
    dataDir = join(workDir, `data-${testCount}`);
  });

  test("stores a valid document under its issuer, and the service serves it", async () => {
    const result = await run("import", corpusPath(CORPUS_FILE));
    assert.deepEqual(result, {
      code: 0,
      stdout: `stored ${CORPUS_ISSUER}: 1 statement(s), 1 new\n`,
      stderr: "",
    });
    const expected = parseRevocationDocument(corpusBytes(CORPUS_FILE));
    assert.deepEqual(texts(await storedStatements(CORPUS_ISSUER)), texts(expected));

    const app = await buildApp(
      loadConfig({}, { dataDir, logLevel: "silent", cpuPool: { threads: 1 } }),
    );
    try {
      const response = await app.inject({ method: "GET", url: `/revocations/${CORPUS_ISSUER}` });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.rawPayload, await stored(CORPUS_ISSUER));
      assert.deepEqual(texts(parseRevocationDocument(response.rawPayload)), texts(expected));
    } finally {
      await app.close();
    }
  });

  test("merges into the stored document, keeping what was there", async () => {
    const first = statementBy(alice, "2030-01-01T00:00:00Z");
    const second = statementBy(alice, "2029-06-01T00:00:00Z");
    assert.equal((await run("import", await fileWith(documentOf(first)))).code, 0);

    const result = await run("import", await fileWith(documentOf(second, first)));
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `stored ${alice.did}: 2 statement(s), 1 new\n`);
    assert.deepEqual(texts(await storedStatements(alice.did)), texts([first, second]));
  });

  test("importing what is already stored changes nothing, not even issued_at", async () => {
    const file = await fileWith(documentOf(statementBy()));
    assert.equal((await run("import", file)).code, 0);
    const before = await stored(alice.did);
    const again = await run("import", file);
    assert.equal(again.code, 0);
    assert.equal(again.stdout, `stored ${alice.did}: 1 statement(s), 0 new\n`);
    assert.deepEqual(await stored(alice.did), before);
  });

  test("splits a document with several issuers into one document each", async () => {
    const aliceStatement = statementBy(alice);
    const bobStatement = statementBy(bob);
    const result = await run("import", await fileWith(documentOf(aliceStatement, bobStatement)));
    assert.equal(result.code, 0);
    assert.equal(
      result.stdout,
      `stored ${alice.did}: 1 statement(s), 1 new\nstored ${bob.did}: 1 statement(s), 1 new\n`,
    );
    assert.deepEqual(texts(await storedStatements(alice.did)), texts([aliceStatement]));
    assert.deepEqual(texts(await storedStatements(bob.did)), texts([bobStatement]));
  });

  describe("an unusable file is refused with exit 2 and changes nothing", () => {
    const tampered = statementBy(bob);
    tampered.set("revoked_at", "2020-01-01T00:00:00Z");
    const keyless = statementBy(bob);
    keyless.delete("key");
    const numericSignature = statementBy(bob);
    numericSignature.set("sig", jsonObject({ alg: "ed25519", value: 7 }));
    // Signed as it is: the date passes the format check but is no real day.
    const impossibleDay = jsonObject({ key: bob.did, revoked_at: "2030-02-30T00:00:00Z" });
    impossibleDay.set("sig", ed25519Signature(bob, canonicalBytes(impossibleDay)));
    const kind = '"continuity-receipt-revocations"';
    const cases: [string, string | Uint8Array, RegExp][] = [
      ["not JSON", "{", /not valid JSON/],
      [
        "a wrong kind",
        '{"kind":"other","version":1,"statements":[]}',
        new RegExp(`kind is "other", expected ${kind}`),
      ],
      ["no kind", '{"version":1,"statements":[]}', new RegExp(`kind is missing, expected ${kind}`)],
      ["a null kind", '{"kind":null,"version":1}', /kind is null, expected/],
      ["no version", `{"kind":${kind},"statements":[]}`, /: version is missing, expected 1\n$/],
      ["a version that is not 1", `{"kind":${kind},"version":"1"}`, /version is "1", expected 1/],
      [
        "statements that are not an array",
        `{"kind":${kind},"version":1,"statements":{}}`,
        /statements is \{\}, expected an array/,
      ],
      ["no statements member", `{"kind":${kind},"version":1}`, /statements is missing, expected/],
      [
        "a statement without a key",
        documentOf(keyless),
        /malformed revocation statement with key missing/,
      ],
      [
        "a signature value that is not a string",
        documentOf(numericSignature),
        new RegExp(`sig\\.value of the statement for "${bob.did}" is 7, not a string`),
      ],
      [
        "a revoked_at that is no real instant",
        documentOf(impossibleDay),
        /revoked_at "2030-02-30T00:00:00Z" of the statement for "did:key:\S+" is not a real instant/,
      ],
      ["a statement that is not an object", documentOf(statementBy(bob), 7), /not an object/],
      [
        "a bad signature, even beside a good statement for another issuer",
        documentOf(statementBy(bob), tampered),
        /revocation signature invalid/,
      ],
      ["no statements", documentOf(), /holds no statements/],
      ["over 1 MiB", " ".repeat(MAX_REVOCATION_DOCUMENT_BYTES + 1), /larger than 1048576 bytes/],
    ];
    for (const [name, content, reason] of cases) {
      test(name, async () => {
        const original = statementBy(bob, "2031-01-01T00:00:00Z");
        assert.equal((await run("import", await fileWith(documentOf(original)))).code, 0);
        const before = await stored(bob.did);

        const file = await fileWith(content);
        const result = await run("import", file);
        assert.equal(result.code, 2);
        assert.equal(result.stdout, "");
        assert.match(result.stderr, /^error: .+\n$/);
        assert.match(result.stderr, reason);
        // JSON's names, not Python's (the reference's repr leaked into messages once).
        assert.doesNotMatch(result.stderr, /\b(None|True|False)\b|'(did:key|other)|\blist\b/);
        assert.deepEqual(await stored(bob.did), before);
      });
    }
  });

  test("refuses to merge into a stored document that is invalid, leaving it as is", async () => {
    const store = new FsDocumentStore(dataDir);
    const corrupt = Buffer.from("{");
    assert.ok(await store.replace("revocations", alice.did, null, corrupt));
    const result = await run("import", await fileWith(documentOf(statementBy(alice))));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /the stored document for did:key:\S+ is invalid/);
    assert.deepEqual(await stored(alice.did), corrupt);
  });

  test("usage and I/O errors exit 2", async () => {
    for (const argv of [[], ["import"], ["export", "x"], ["import", "a", "b"], ["--nope"]]) {
      const result = await run(...argv);
      assert.equal(result.code, 2, argv.join(" "));
      assert.match(result.stderr, /usage: receiptd revocations import FILE/);
    }
    const missing = await run("import", join(workDir, "missing.json"));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: cannot read .*missing\.json/);
  });

  test("is wired into receiptd", async () => {
    const run = spawnSync(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "revocations", "import", corpusPath(CORPUS_FILE)],
      { encoding: "utf8", env: { ...process.env, DATA_DIR: dataDir } },
    );
    assert.equal(run.stderr, "");
    assert.equal(run.status, 0);
    assert.equal(run.stdout, `stored ${CORPUS_ISSUER}: 1 statement(s), 1 new\n`);
    assert.notEqual(await stored(CORPUS_ISSUER), null);
  });
});
