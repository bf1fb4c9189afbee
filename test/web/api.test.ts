/**
 * The page's verifier functions (src/web/api.ts) against receiptd's own CLIs: the same
 * inputs give the same standard output, and where a CLI exits 2 without JSON the function
 * throws with the CLI's message. (The corpus itself is checked in the browser, in
 * test/service/endpoints/page/browser.test.ts, and under both crypto implementations in
 * test/verifier/crypto/contract.test.ts.)
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { main as anchorCli } from "../../src/cli/continuity-receipt-anchor.js";
import { main as verifyCli } from "../../src/cli/continuity-receipt-verify.js";
import { main as receiptCli } from "../../src/cli/continuity-receipt-verify-receipt.js";
import {
  blockHeaders,
  fileDigestForProof,
  ReceiptdInputError,
  receiptdGlobal,
  verifyAnchorJson,
  verifyBundleJson,
  verifyReceiptJson,
} from "../../src/web/api.js";
import { corpusBytes, corpusPath } from "../support/corpus.js";

const scratch = mkdtempSync(join(tmpdir(), "receiptd-web-api-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function file(name: string, content: string | Uint8Array): string {
  const path = join(scratch, name);
  writeFileSync(path, content);
  return path;
}

async function cli(
  main: (
    argv: string[],
    io: { stdout(t: string): void; stderr(t: string): void },
  ) => Promise<number>,
  argv: string[],
): Promise<{ stdout: string; stderr: string; code: number }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { stdout, stderr, code };
}

const REVOCATIONS = "vectors/verification/12_revoked_issuer.revocations.json";
const BAD_DOCUMENT = '{"kind":"continuity-receipt-revocations","version":2,"statements":[]}';

describe("verifyBundleJson is continuity-receipt-verify", () => {
  const cases: [string, string, string[], Parameters<typeof verifyBundleJson>[1]][] = [
    ["a trusted bundle", "vectors/02_happy_full.json", [], {}],
    [
      "--require-anchor",
      "vectors/02_happy_full.json",
      ["--require-anchor"],
      { requireAnchor: true },
    ],
    [
      "--revocations with a revoked issuer",
      "vectors/02_happy_full.json",
      ["--revocations", corpusPath(REVOCATIONS)],
      { revocations: [{ name: corpusPath(REVOCATIONS), data: corpusBytes(REVOCATIONS) }] },
    ],
    ["CRLF line endings read as the CLI reads files", "vectors/01_happy_minimal.json", [], {}],
  ];
  for (const [name, vector, flags, options] of cases) {
    test(name, async () => {
      const bytes = name.startsWith("CRLF")
        ? Buffer.from(corpusBytes(vector).toString("utf8").replaceAll("\n", "\r\n"))
        : corpusBytes(vector);
      const path = file("bundle.json", bytes);
      const expected = await cli(verifyCli, [path, ...flags]);
      assert.equal(verifyBundleJson(bytes, options), expected.stdout);
      assert.equal(verifyBundleJson(bytes.toString("utf8"), options), expected.stdout);
      assert.equal(verifyBundleJson(Uint8Array.from(bytes).buffer, options), expected.stdout);
    });
  }

  test("an unusable revocation document is named as the CLI names it", async () => {
    const path = file("bad-revocations.json", BAD_DOCUMENT);
    const bundle = corpusPath("vectors/02_happy_full.json");
    const expected = await cli(verifyCli, [bundle, "--revocations", path]);
    const output = verifyBundleJson(corpusBytes("vectors/02_happy_full.json"), {
      revocations: [{ name: path, data: BAD_DOCUMENT }],
    });
    assert.equal(output, expected.stdout);
    assert.match(output, /bad_revocations_document/);
  });

  test("not JSON, and too large, answer as the CLI does", async () => {
    for (const bytes of [Buffer.from("{"), Buffer.alloc(8 * 1024 * 1024 + 1, 0x20)]) {
      const expected = await cli(verifyCli, [file("odd.json", bytes)]);
      assert.equal(verifyBundleJson(bytes), expected.stdout);
    }
  });
});

describe("verifyReceiptJson is continuity-receipt-verify-receipt", () => {
  const directory = "vectors/verification/";
  test("with a bundle and revocation documents", async () => {
    const expected = await cli(receiptCli, [
      corpusPath(`${directory}12_revoked_issuer.json`),
      "--bundle",
      corpusPath(`${directory}bundle.json`),
      "--revocations",
      corpusPath(REVOCATIONS),
    ]);
    const output = verifyReceiptJson(corpusBytes(`${directory}12_revoked_issuer.json`), {
      bundle: corpusBytes(`${directory}bundle.json`),
      revocations: [corpusBytes(REVOCATIONS)],
    });
    assert.equal(output, expected.stdout);
    assert.match(output, /key_revoked/);
  });

  test("an unusable revocation document: {valid: false, errors: [code]}", async () => {
    const path = file("bad-revocations.json", BAD_DOCUMENT);
    const receipt = corpusPath(`${directory}01_valid.json`);
    const expected = await cli(receiptCli, [receipt, "--revocations", path]);
    assert.equal(
      verifyReceiptJson(corpusBytes(`${directory}01_valid.json`), { revocations: [BAD_DOCUMENT] }),
      expected.stdout,
    );
  });

  test("a receipt or bundle that is not JSON throws the CLI's message (exit 2)", async () => {
    const receipt = file("receipt.json", "{");
    const expected = await cli(receiptCli, [receipt]);
    assert.equal(expected.code, 2);
    assert.throws(
      () => verifyReceiptJson("{"),
      (error: unknown) =>
        error instanceof ReceiptdInputError && expected.stderr === `error: ${error.message}\n`,
    );
    const bundle = file("bundle.json", '{"a":1,"a":2}');
    const withBundle = await cli(receiptCli, [
      corpusPath(`${directory}01_valid.json`),
      "--bundle",
      bundle,
    ]);
    assert.throws(
      () =>
        verifyReceiptJson(corpusBytes(`${directory}01_valid.json`), { bundle: '{"a":1,"a":2}' }),
      (error: unknown) =>
        error instanceof ReceiptdInputError && withBundle.stderr === `error: ${error.message}\n`,
    );
  });
});

describe("verifyAnchorJson is continuity-receipt-anchor verify --json", () => {
  const proof = corpusBytes("vectors/anchor/hello-world.txt.ots");
  const digest = fileDigestForProof(proof, corpusBytes("vectors/anchor/hello-world.txt"));
  const headersPath = corpusPath("vectors/anchor/headers.json");
  const headerHex = (
    JSON.parse(corpusBytes("vectors/anchor/headers.json").toString()) as {
      headers: Record<string, string>;
    }
  ).headers["358391"]!;

  test("the file is hashed with the proof's own operation", () => {
    assert.equal(digest, "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340");
  });

  const cases: [string, string[], Parameters<typeof verifyAnchorJson>[1]][] = [
    ["no headers", ["--digest", digest], { digest }],
    [
      "a headers file",
      ["--digest", digest, "--headers", headersPath],
      { digest, headers: corpusBytes("vectors/anchor/headers.json").toString() },
    ],
    [
      "a header and its height",
      ["--digest", digest, "--header", headerHex, "--height", "358391"],
      { digest, headers: `358391 ${headerHex}` },
    ],
    [
      "the file instead of the digest",
      ["--digest", digest],
      { file: corpusBytes("vectors/anchor/hello-world.txt") },
    ],
    [
      "another digest",
      ["--digest", `sha256:${"00".repeat(32)}`],
      { digest: `sha256:${"00".repeat(32)}` },
    ],
    [
      "a wrong header",
      ["--digest", digest, "--header", "00".repeat(80), "--height", "358391"],
      { digest, headers: { "358391": "00".repeat(80) } },
    ],
  ];
  for (const [name, flags, options] of cases) {
    test(name, async () => {
      const expected = await cli(anchorCli, [
        "verify",
        corpusPath("vectors/anchor/hello-world.txt.ots"),
        ...flags,
        "--json",
      ]);
      assert.equal(verifyAnchorJson(proof, options), expected.stdout);
    });
  }

  test("the pending fixture", async () => {
    const pending = corpusPath("vectors/anchor/known-and-unknown-notary.txt.ots");
    const expected = await cli(anchorCli, [
      "verify",
      pending,
      "--digest",
      "00".repeat(32),
      "--json",
    ]);
    assert.equal(
      verifyAnchorJson(corpusBytes("vectors/anchor/known-and-unknown-notary.txt.ots"), {
        digest: "00".repeat(32),
      }),
      expected.stdout,
    );
  });

  test("headers that are not a table, or give a height twice, are refused", () => {
    for (const text of [
      "[1]",
      "358391",
      "x 00",
      `1 ${"00".repeat(80)}\n1 ${"11".repeat(80)}`,
      '{"headers":{"h":"00"}}',
    ]) {
      assert.throws(() => blockHeaders(text), ReceiptdInputError, text);
    }
    assert.equal(blockHeaders(`1 aa\n\n2: bb\n`).size, 2);
    assert.throws(() => verifyAnchorJson(proof, {}), ReceiptdInputError);
  });
});

test("the global: its functions, frozen, with the parsed forms", () => {
  const global = receiptdGlobal();
  assert.ok(Object.isFrozen(global));
  // In Node the server's implementation; the page's bundle names @noble (page/browser.test.ts).
  assert.match(global.crypto, /^libsodium /);
  const bundle = corpusBytes("vectors/02_happy_full.json");
  assert.deepEqual(global.verifyBundle(bundle), JSON.parse(global.verifyBundleJson(bundle)));
});
