import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  loadAndMergeRevocations,
  loadRevocationStatements,
} from "../../src/io/revocation-sources.js";
import { signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import {
  type JsonObject,
  type JsonValue,
  jsonObject,
  member,
  PyFloat,
} from "../../src/verifier/json/value.js";
import {
  buildRevocationDocument,
  MAX_REVOCATION_DOCUMENT_BYTES,
  parseRevocationDocument,
  type RevocationLoadCode,
  RevocationLoadError,
  signRevocationStatement,
  validateRevocationDocument,
} from "../../src/verifier/revocations/document.js";
import { verifyStatements } from "../../src/verifier/revocations/statements.js";

const corpusDocument = readFileSync(
  new URL(
    "../../../shared/corpus/vectors/verification/12_revoked_issuer.revocations.json",
    import.meta.url,
  ),
);
const signer = signerFromSeed(new Uint8Array(32).fill(3));
const otherSigner = signerFromSeed(new Uint8Array(32).fill(4));

const EMPTY_DOCUMENT = '{"kind":"continuity-receipt-revocations","version":1,"statements":[]}';

/** A valid, empty document padded with trailing whitespace to exactly `size` bytes. */
function paddedDocument(size: number): Buffer {
  return Buffer.from(EMPTY_DOCUMENT.padEnd(size, " "));
}

function documentBytes(statements: readonly JsonValue[]): Buffer {
  return Buffer.from(dumpCompact(buildRevocationDocument(statements)));
}

function loadFailure(code: RevocationLoadCode, detail?: RegExp) {
  return (error: unknown): boolean =>
    error instanceof RevocationLoadError &&
    error.code === code &&
    (detail === undefined || detail.test(error.detail));
}

const workDir = mkdtempSync(join(tmpdir(), "revocation-documents-"));
after(() => rmSync(workDir, { recursive: true, force: true }));

function tempFile(name: string, content: Uint8Array | string): string {
  const path = join(workDir, name);
  writeFileSync(path, content);
  return path;
}

describe("parseRevocationDocument", () => {
  test("the corpus document gives its statements, in order", () => {
    const statements = parseRevocationDocument(corpusDocument);
    assert.equal(statements.length, 1);
    assert.equal(member(statements[0] as JsonObject, "revoked_at"), "2026-09-23T20:00:00Z");
  });

  test("exactly 1 MiB is accepted, one byte more is too large", () => {
    assert.equal(MAX_REVOCATION_DOCUMENT_BYTES, 1_048_576);
    assert.deepEqual(parseRevocationDocument(paddedDocument(1_048_576)), []);
    assert.throws(
      () => parseRevocationDocument(paddedDocument(1_048_577)),
      loadFailure("revocations_too_large"),
    );
  });

  const rejected: [string, Uint8Array | string][] = [
    [
      "invalid UTF-8",
      Buffer.concat([Buffer.from(EMPTY_DOCUMENT.slice(0, -1)), Buffer.from([0xff, 0x7d])]),
    ],
    ["a UTF-8 BOM", `\ufeff${EMPTY_DOCUMENT}`],
    ["a duplicate member", EMPTY_DOCUMENT.replace('"version":1', '"version":1,"version":1')],
    ["a syntax error", EMPTY_DOCUMENT.slice(0, -1)],
    ["an empty file", ""],
    ["a document that is not an object", "[]"],
    ["a wrong kind", EMPTY_DOCUMENT.replace("-revocations", "-verification")],
    ["a missing kind", EMPTY_DOCUMENT.replace('"kind":"continuity-receipt-revocations",', "")],
    ["version 2", EMPTY_DOCUMENT.replace('"version":1', '"version":2')],
    ['version "1"', EMPTY_DOCUMENT.replace('"version":1', '"version":"1"')],
    ["a missing version", EMPTY_DOCUMENT.replace('"version":1,', "")],
    ["statements that are an object", EMPTY_DOCUMENT.replace("[]", "{}")],
    ["statements that are null", EMPTY_DOCUMENT.replace("[]", "null")],
    ["missing statements", EMPTY_DOCUMENT.replace(',"statements":[]', "")],
  ];
  for (const [name, content] of rejected) {
    test(`${name} → bad_revocations_document`, () => {
      assert.throws(
        () => parseRevocationDocument(Buffer.from(content)),
        loadFailure("bad_revocations_document"),
      );
    });
  }

  test("version uses Python equality: 1.0 and true are accepted", () => {
    for (const version of ["1.0", "true", "1e0"]) {
      const content = EMPTY_DOCUMENT.replace('"version":1', `"version":${version}`);
      assert.deepEqual(parseRevocationDocument(Buffer.from(content)), []);
    }
  });

  test("statements are not validated at load time", () => {
    const content = EMPTY_DOCUMENT.replace("[]", '[1,"junk",{"key":null}]');
    assert.equal(parseRevocationDocument(Buffer.from(content)).length, 3);
  });

  test("the error carries its code and a readable detail", () => {
    try {
      parseRevocationDocument(Buffer.from(EMPTY_DOCUMENT.replace('"version":1', '"version":2')));
      assert.fail("expected a RevocationLoadError");
    } catch (error) {
      assert.ok(error instanceof RevocationLoadError);
      assert.equal(error.code, "bad_revocations_document");
      assert.equal(error.detail, "version is 2, expected 1");
      assert.equal(error.message, "bad_revocations_document: version is 2, expected 1");
    }
  });
});

describe("signRevocationStatement and buildRevocationDocument", () => {
  test("a statement is self-signed, with members in order", () => {
    const statement = signRevocationStatement(signer, {
      revokedAt: "2026-01-01T00:00:00Z",
      reason: "rotation",
    });
    assert.deepEqual([...statement.keys()], ["key", "revoked_at", "reason", "sig"]);
    assert.equal(member(statement, "key"), signer.did);
    const check = verifyStatements([statement]);
    assert.deepEqual(check.errors, []);
    assert.equal(check.revoked[0]?.revokedAt, Date.parse("2026-01-01T00:00:00Z"));
  });

  test("the reason is optional", () => {
    const statement = signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z" });
    assert.deepEqual([...statement.keys()], ["key", "revoked_at", "sig"]);
  });

  test("a revoked_at verifiers would not accept is refused", () => {
    for (const revokedAt of ["2026-01-01", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00+00:00"]) {
      assert.throws(() => signRevocationStatement(signer, { revokedAt }), RangeError);
    }
  });

  test("a document has kind, version, issued_at and statements, in that order", () => {
    const statement = signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z" });
    const document = buildRevocationDocument([statement], "2026-01-02T00:00:00Z");
    assert.deepEqual([...document.keys()], ["kind", "version", "issued_at", "statements"]);
    assert.deepEqual([...buildRevocationDocument([]).keys()], ["kind", "version", "statements"]);
    const reloaded = parseRevocationDocument(Buffer.from(dumpCompact(document)));
    assert.equal(dumpCompact(reloaded), dumpCompact([statement]));
  });
});

describe("validateRevocationDocument", () => {
  const statement = (): JsonObject =>
    signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z", reason: "rotation" });

  test("a good document has no problems, as bytes or parsed", () => {
    assert.deepEqual(validateRevocationDocument(corpusDocument), []);
    assert.deepEqual(validateRevocationDocument(buildRevocationDocument([statement()])), []);
  });

  test("a tampered statement is caught", () => {
    const tampered = statement();
    tampered.set("reason", "something else");
    assert.deepEqual(validateRevocationDocument(documentBytes([statement(), tampered])), [
      `revocation signature invalid for '${signer.did}'`,
    ]);
  });

  test("a statement signed by another key is caught", () => {
    const forged = statement();
    forged.set("key", otherSigner.did);
    assert.deepEqual(validateRevocationDocument(buildRevocationDocument([forged])), [
      `revocation signature invalid for '${otherSigner.did}'`,
    ]);
  });

  test("every bad statement is listed", () => {
    const problems = validateRevocationDocument(
      buildRevocationDocument(["junk", jsonObject({ key: signer.did, revoked_at: "x" })]),
    );
    assert.deepEqual(problems, [
      "revocation statement is not an object",
      `malformed revocation statement for '${signer.did}'`,
    ]);
  });

  test("a statement the reference cannot evaluate makes the document unusable", () => {
    const withFloat = statement();
    withFloat.set("reason", new PyFloat(0.5));
    const [problem, ...rest] = validateRevocationDocument(buildRevocationDocument([withFloat]));
    assert.match(String(problem), /^revocations unusable: floats are not allowed/);
    assert.deepEqual(rest, []);
  });

  test("envelope and loading problems are reported like the loader's", () => {
    assert.deepEqual(validateRevocationDocument(Buffer.from("{")), [
      "revocation document is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ]);
    assert.deepEqual(validateRevocationDocument(jsonObject({ kind: "x" })), [
      "kind is 'x', expected 'continuity-receipt-revocations'",
    ]);
    assert.equal(validateRevocationDocument(paddedDocument(1_048_577)).length, 1);
  });

  test("the reference's wording is the default; operators can ask for JSON's names", () => {
    const cases: [JsonValue, string, string][] = [
      [
        jsonObject({ version: 1 }),
        "kind is None, expected 'continuity-receipt-revocations'",
        'kind is missing, expected "continuity-receipt-revocations"',
      ],
      [
        jsonObject({ kind: null }),
        "kind is None, expected 'continuity-receipt-revocations'",
        'kind is null, expected "continuity-receipt-revocations"',
      ],
      [
        jsonObject({ kind: "continuity-receipt-revocations", version: false }),
        "version is False, expected 1",
        "version is false, expected 1",
      ],
      [
        jsonObject({ kind: "continuity-receipt-revocations", version: 1, statements: "x" }),
        "statements is not a list",
        'statements is "x", expected an array',
      ],
      [
        buildRevocationDocument([jsonObject({ revoked_at: "2026-01-01T00:00:00Z" })]),
        "malformed revocation statement for None",
        "malformed revocation statement with key missing",
      ],
      [
        buildRevocationDocument([
          jsonObject({ key: signer.did, revoked_at: "2026-01-01T00:00:00Z" }),
        ]),
        `revocation statement unsigned for '${signer.did}'`,
        `revocation statement unsigned for "${signer.did}"`,
      ],
    ];
    for (const [document, reference, json] of cases) {
      assert.deepEqual(validateRevocationDocument(document), [reference]);
      assert.deepEqual(validateRevocationDocument(document, "reference"), [reference]);
      assert.deepEqual(validateRevocationDocument(document, "json"), [json]);
    }
  });

  test("where the reference crashes, JSON wording says what is wrong instead of Python's error", () => {
    const numeric = statement();
    numeric.set("sig", jsonObject({ alg: "ed25519", value: 5 }));
    assert.deepEqual(validateRevocationDocument(buildRevocationDocument([numeric])), [
      "revocations unusable: object of type 'int' has no len()",
    ]);
    assert.deepEqual(validateRevocationDocument(buildRevocationDocument([numeric]), "json"), [
      `revocations unusable: sig.value of the statement for "${signer.did}" is 5, not a string`,
    ]);
  });
});

describe("loadRevocationStatements from files", () => {
  test("a good file", async () => {
    const path = tempFile("good.json", corpusDocument);
    assert.equal((await loadRevocationStatements(path)).length, 1);
  });

  test("exactly 1 MiB is read, one byte more is too large", async () => {
    assert.deepEqual(
      await loadRevocationStatements(tempFile("exact.json", paddedDocument(1_048_576))),
      [],
    );
    await assert.rejects(
      loadRevocationStatements(tempFile("over.json", paddedDocument(1_048_577))),
      loadFailure("revocations_too_large"),
    );
  });

  test("an unbounded source is read only up to the limit", async () => {
    await assert.rejects(
      loadRevocationStatements("/dev/zero"),
      loadFailure("revocations_too_large"),
    );
  });

  test("document problems name the source", async () => {
    const path = tempFile("bom.json", `\ufeff${EMPTY_DOCUMENT}`);
    await assert.rejects(
      loadRevocationStatements(path),
      loadFailure("bad_revocations_document", new RegExp(`^${path}: .*BOM`)),
    );
  });

  test("a missing file or a directory is unreachable", async () => {
    await assert.rejects(
      loadRevocationStatements(join(workDir, "absent.json")),
      loadFailure("revocations_unreachable", /ENOENT/),
    );
    await assert.rejects(
      loadRevocationStatements(workDir),
      loadFailure("revocations_unreachable", /EISDIR/),
    );
  });
});

describe("loadRevocationStatements from URLs", () => {
  const JSON_TYPE = { "content-type": "application/json; charset=utf-8" };
  const openResponses = new Set<ServerResponse>();
  let endlessBodyClosed: Promise<void> = Promise.resolve();
  const server = createServer((request, response) => {
    switch (request.url) {
      case "/good":
        response.end(corpusDocument);
        return;
      case "/exact":
        response.end(paddedDocument(1_048_576));
        return;
      case "/over":
        response.end(paddedDocument(1_048_577));
        return;
      case "/endless": {
        endlessBodyClosed = new Promise((resolve) => response.once("close", resolve));
        const chunk = Buffer.alloc(64 * 1024, " ");
        const pump = (): void => {
          while (!response.destroyed && response.write(chunk)) {}
          if (!response.destroyed) response.once("drain", pump);
        };
        pump();
        return;
      }
      case "/silent":
        openResponses.add(response);
        return;
      case "/redirect":
        response.writeHead(302, { location: "/good" }).end();
        return;
      case "/redirect-insecure":
        response.writeHead(302, { location: "http://192.0.2.1/revocations.json" }).end();
        return;
      case "/no-document":
        response.writeHead(404, JSON_TYPE).end('{"error":"no_document"}');
        return;
      case "/redirect-no-document":
        response.writeHead(302, { location: "/no-document" }).end();
        return;
      case "/other-404":
        response.writeHead(404, JSON_TYPE).end('{"error":"anchor_not_found"}');
        return;
      case "/padded-no-document":
        response.writeHead(404, JSON_TYPE).end(`{"error":"no_document"}${" ".repeat(2048)}`);
        return;
      case "/no-document-list":
        response.writeHead(404, JSON_TYPE).end('[{"error":"no_document"}]');
        return;
      case "/500-no-document":
        response.writeHead(500, JSON_TYPE).end('{"error":"no_document"}');
        return;
      case "/503":
        response.writeHead(503, JSON_TYPE).end('{"error":"store_unavailable"}');
        return;
      default:
        response.writeHead(404).end("not found");
    }
  });
  let base = "";

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const response of openResponses) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("a good document over loopback http", async () => {
    assert.equal((await loadRevocationStatements(`${base}/good`)).length, 1);
  });

  test("redirects are followed", async () => {
    assert.equal((await loadRevocationStatements(`${base}/redirect`)).length, 1);
  });

  test("a 404 is unreachable", async () => {
    await assert.rejects(
      loadRevocationStatements(`${base}/missing`),
      loadFailure("revocations_unreachable", /HTTP 404/),
    );
  });

  test("the service's 404 no_document is an empty list, after a redirect too", async () => {
    assert.deepEqual(await loadRevocationStatements(`${base}/no-document`), []);
    assert.deepEqual(await loadRevocationStatements(`${base}/redirect-no-document`), []);
    assert.deepEqual(
      await loadAndMergeRevocations([`${base}/no-document`, `${base}/good`]),
      await loadRevocationStatements(`${base}/good`),
    );
  });

  test("any other 404, or no_document with another status, is unreachable", async () => {
    for (const path of ["/other-404", "/padded-no-document", "/no-document-list"]) {
      await assert.rejects(
        loadRevocationStatements(`${base}${path}`),
        loadFailure("revocations_unreachable", /answered HTTP 404$/),
        path,
      );
    }
    await assert.rejects(
      loadRevocationStatements(`${base}/500-no-document`),
      loadFailure("revocations_unreachable", /answered HTTP 500$/),
    );
    await assert.rejects(
      loadRevocationStatements(`${base}/503`),
      loadFailure("revocations_unreachable", /answered HTTP 503$/),
    );
  });

  test("exactly 1 MiB is accepted, one byte more is too large", async () => {
    assert.deepEqual(await loadRevocationStatements(`${base}/exact`), []);
    await assert.rejects(
      loadRevocationStatements(`${base}/over`),
      loadFailure("revocations_too_large"),
    );
  });

  test("an endless body is cut off after 1 MiB + 1 bytes", async () => {
    await assert.rejects(
      loadRevocationStatements(`${base}/endless`),
      loadFailure("revocations_too_large"),
    );
    await endlessBodyClosed;
  });

  test("a server that never answers times out", async () => {
    await assert.rejects(
      loadRevocationStatements(`${base}/silent`, { timeoutMs: 200 }),
      loadFailure("revocations_unreachable", /did not answer within 200 ms/),
    );
  });

  test("a refused connection is unreachable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(
      loadRevocationStatements(`http://127.0.0.1:${port}/`),
      loadFailure("revocations_unreachable", /ECONNREFUSED/),
    );
  });

  test("plain http to any other host is refused before connecting", async (t) => {
    const fetchCalls = t.mock.method(globalThis, "fetch", () => {
      throw new Error("no request may be made");
    });
    for (const url of [
      "http://example.com/revocations.json",
      "HTTP://example.com/revocations.json",
      "http://127.0.0.2/revocations.json",
      "http://localhost.example.com/revocations.json",
      "http://10.0.0.1:8080/revocations.json",
    ]) {
      await assert.rejects(loadRevocationStatements(url), loadFailure("revocations_insecure_url"));
    }
    assert.equal(fetchCalls.mock.callCount(), 0);
  });

  test("a redirect to plain http elsewhere is refused before following it", async (t) => {
    const realFetch = globalThis.fetch;
    const fetchCalls = t.mock.method(globalThis, "fetch", realFetch);
    await assert.rejects(
      loadRevocationStatements(`${base}/redirect-insecure`),
      loadFailure("revocations_insecure_url", /192\.0\.2\.1/),
    );
    assert.equal(fetchCalls.mock.callCount(), 1);
  });
});

describe("loadAndMergeRevocations", () => {
  const first = signRevocationStatement(signer, { revokedAt: "2026-01-01T00:00:00Z" });
  const second = signRevocationStatement(otherSigner, { revokedAt: "2026-01-01T00:00:00Z" });

  test("merges in order, dropping repeated statements but never non-objects", async () => {
    const a = tempFile("a.json", documentBytes([first, second, "junk"]));
    const b = tempFile("b.json", documentBytes([second, "junk", first]));
    const merged = await loadAndMergeRevocations([a, b]);
    assert.equal(dumpCompact(merged), dumpCompact([first, second, "junk", "junk"]));
  });

  test("no sources, no statements", async () => {
    assert.deepEqual(await loadAndMergeRevocations([]), []);
  });

  test("the first unusable source is the one reported", async () => {
    const good = tempFile("merge-good.json", documentBytes([first]));
    const bad = tempFile("merge-bad.json", "[]");
    await assert.rejects(
      loadAndMergeRevocations([good, bad, join(workDir, "absent.json")]),
      loadFailure("bad_revocations_document", new RegExp(`^${bad}: `)),
    );
  });
});
