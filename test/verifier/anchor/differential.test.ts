/**
 * OpenTimestamps differential tests: the verifier against an independent, spec-following
 * oracle (test/support/ots-oracle.ts) on inputs that are mostly NOT well-formed — empty,
 * short, random garbage, random trees behind a valid header, and both corpus fixtures cut at
 * every length, grown by a byte at every position, shrunk by a byte and flipped at every byte.
 * Every case goes through the library; a sample goes through the CLI and, over a real
 * socket, through `POST /verify-anchor`. Each must give the oracle's status and code.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../../src/cli/continuity-receipt-anchor.js";
import { type AnchorResult, verifyProof } from "../../../src/verifier/anchor/index.js";
import { startTestService, type TestService } from "../../service/support/service.js";
import { corpusBytes } from "../../support/corpus.js";
import { type OracleResult, oracleParseCode, oracleVerify } from "../../support/ots-oracle.js";

const MAGIC = Buffer.from("004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294", "hex");
const HELLO = corpusBytes("vectors/anchor/hello-world.txt.ots");
const NOTARY = corpusBytes("vectors/anchor/known-and-unknown-notary.txt.ots");
const HELLO_DIGEST = createHash("sha256")
  .update(corpusBytes("vectors/anchor/hello-world.txt"))
  .digest();
// The notary fixture's file digest, as written in its header (sha256, bytes 33..65).
const NOTARY_DIGEST = NOTARY.subarray(33, 65);
const HELLO_HEIGHT = 358391;
const HELLO_HEADER = Buffer.from(
  (
    JSON.parse(corpusBytes("vectors/anchor/headers.json").toString("utf8")) as {
      headers: Record<string, string>;
    }
  ).headers[String(HELLO_HEIGHT)]!,
  "hex",
);

interface Case {
  name: string;
  proof: Buffer;
  digest: Buffer;
  /** At most one header: what the CLI's --header/--height and the HTTP body can both carry. */
  header?: { height: number; bytes: Buffer };
}

/** mulberry32: a small seeded PRNG, so every run checks the same "random" inputs. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const helloHeader = { height: HELLO_HEIGHT, bytes: HELLO_HEADER };
const SOME_DIGEST = createHash("sha256").update("receiptd differential").digest();

function shortInputs(): Case[] {
  const cases: Case[] = [];
  const header = MAGIC.length + 2 + 32;
  for (let length = 0; length <= header + 16; length++) {
    cases.push({ name: `${length} zero bytes`, proof: Buffer.alloc(length), digest: SOME_DIGEST });
    cases.push({
      name: `${length} 0xff bytes`,
      proof: Buffer.alloc(length, 0xff),
      digest: SOME_DIGEST,
    });
  }
  // The example: the base64 text "AAAA" is three zero bytes.
  cases.push({ name: "base64 AAAA", proof: Buffer.from("AAAA", "base64"), digest: SOME_DIGEST });
  for (let length = 0; length <= MAGIC.length; length++) {
    const prefix = MAGIC.subarray(0, length);
    cases.push({ name: `magic[0..${length}]`, proof: Buffer.from(prefix), digest: SOME_DIGEST });
    // A prefix that goes wrong in its last byte: short of the header it is still a cut file.
    if (length > 0) {
      const wrong = Buffer.from(prefix);
      wrong[length - 1]! ^= 0x01;
      cases.push({
        name: `magic[0..${length}] last byte wrong`,
        proof: wrong,
        digest: SOME_DIGEST,
      });
    }
  }
  cases.push({ name: "text", proof: Buffer.from("Hello World!\n"), digest: SOME_DIGEST });
  return cases;
}

function varuint(value: bigint): Buffer {
  const out: number[] = [];
  let rest = value;
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    out.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return Buffer.from(out);
}

/** An attestation of an unknown kind with an empty payload, after its 0x00 marker. */
const UNKNOWN_LEAF = Buffer.from("010203040506070800", "hex");

/** Inputs at the edges of the varuint and header reads, built by hand. */
function edgeInputs(): Case[] {
  const head = Buffer.concat([MAGIC, Buffer.of(1, 0x08), SOME_DIGEST]);
  const tree = (...parts: (Buffer | number[])[]): Buffer =>
    Buffer.concat([head, ...parts.map((part) => Buffer.from(part))]);
  const bitcoin = (payload: Buffer): Buffer =>
    Buffer.concat([
      Buffer.of(0x00),
      Buffer.from("0588960d73d71901", "hex"),
      varuint(BigInt(payload.length)),
      payload,
    ]);
  const cases: [string, Buffer][] = [
    ["append length 2^60", tree([0xf0], varuint(2n ** 60n))],
    ["append length 2^69 (10 bytes)", tree([0xf0], varuint(2n ** 69n), [0x61])],
    ["append length of 8 continuation bytes, then EOF", tree([0xf0], Buffer.alloc(8, 0xff))],
    ["append length of 9 continuation bytes, then EOF", tree([0xf0], Buffer.alloc(9, 0xff))],
    ["append length of 10 continuation bytes, then EOF", tree([0xf0], Buffer.alloc(10, 0xff))],
    ["append length of 11 bytes", tree([0xf0], Buffer.alloc(10, 0x80), [0x01])],
    [
      "payload length 2^53",
      tree([0x00], Buffer.from("0102030405060708", "hex"), varuint(2n ** 53n)),
    ],
    ["bitcoin height 2^53 - 1", tree(bitcoin(varuint(2n ** 53n - 1n)))],
    ["bitcoin height 2^53", tree(bitcoin(varuint(2n ** 53n)))],
    ["bitcoin height 2^69 + 5", tree(bitcoin(varuint(2n ** 69n + 5n)))],
    [
      "litecoin-tagged huge height",
      tree([0x00], Buffer.from("06869a0d73d71b45", "hex"), [10], varuint(2n ** 64n)),
    ],
    [
      "bitcoin height of 9 continuation bytes inside the payload",
      tree(bitcoin(Buffer.alloc(9, 0xff))),
    ],
    [
      "bitcoin height of 10 continuation bytes inside the payload",
      tree(bitcoin(Buffer.alloc(10, 0xff))),
    ],
    [
      "pending URI length 2^62",
      tree([0x00], Buffer.from("83dfe30d2ef90c8e", "hex"), [9], varuint(2n ** 62n)),
    ],
    ["fork marker, then EOF", tree([0xff])],
    ["two fork markers", tree([0xff, 0xff, 0x00])],
    ["keccak op, then EOF", tree([0x67])],
    ["unknown op, then EOF", tree([0x04])],
    ["version 2, header otherwise whole", Buffer.concat([MAGIC, Buffer.of(2)])],
    ["file hash keccak, then EOF", Buffer.concat([MAGIC, Buffer.of(1, 0x67)])],
    ["sha1 file digest cut", Buffer.concat([MAGIC, Buffer.of(1, 0x02), Buffer.alloc(19)])],
    ["hexlify x7 (4096 bytes)", tree(Buffer.alloc(7, 0xf3), bitcoin(varuint(1n)))],
    ["hexlify x8 (8192 bytes)", tree(Buffer.alloc(8, 0xf3), bitcoin(varuint(1n)))],
    ["hexlify x8, then EOF", tree(Buffer.alloc(8, 0xf3))],
    ["256 nested operations", tree(Buffer.alloc(256, 0x08), bitcoin(varuint(1n)))],
    ["257 nested operations", tree(Buffer.alloc(257, 0x08), bitcoin(varuint(1n)))],
    ["257 nested operations, then EOF", tree(Buffer.alloc(257, 0x08))],
    [
      "10,000 leaves",
      tree(...Array.from({ length: 9_999 }, () => Buffer.of(0xff, 0x00, ...UNKNOWN_LEAF)), [
        0x00,
        ...UNKNOWN_LEAF,
      ]),
    ],
    [
      "10,001 leaves",
      tree(...Array.from({ length: 10_000 }, () => Buffer.of(0xff, 0x00, ...UNKNOWN_LEAF)), [
        0x00,
        ...UNKNOWN_LEAF,
      ]),
    ],
    [
      "10,001 leaves, the last cut",
      tree(...Array.from({ length: 10_000 }, () => Buffer.of(0xff, 0x00, ...UNKNOWN_LEAF)), [0x00]),
    ],
  ];
  return cases.map(([name, proof]) => ({ name, proof, digest: SOME_DIGEST }));
}

function randomGarbage(count: number): Case[] {
  const random = prng(0x0715);
  return Array.from({ length: count }, (_, index) => {
    const length = Math.floor(random() * 200);
    const proof = Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
    return { name: `garbage #${index}`, proof, digest: SOME_DIGEST };
  });
}

/** Bytes that mean something in a tree, so random trees reach every branch of the grammar. */
const TREE_ALPHABET = [
  0x00, 0xff, 0xf0, 0xf1, 0xf2, 0xf3, 0x08, 0x02, 0x03, 0x67, 0x01, 0x02, 0x20, 0x7f, 0x80,
];
const TAGS = ["0588960d73d71901", "06869a0d73d71b45", "83dfe30d2ef90c8e", "0102030405060708"];

function randomTrees(count: number): Case[] {
  const random = prng(0x2612);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  return Array.from({ length: count }, (_, index) => {
    const fileOp = pick([0x08, 0x08, 0x02, 0x03, 0x67, 0x00]);
    const digestLength = fileOp === 0x08 ? 32 : 20;
    const digest = createHash("sha256").update(`tree ${index}`).digest().subarray(0, digestLength);
    const parts: Buffer[] = [MAGIC, Buffer.of(pick([1, 1, 1, 2]), fileOp), digest];
    const length = Math.floor(random() * 48);
    for (let i = 0; i < length; i++) {
      const roll = random();
      if (roll < 0.08) parts.push(Buffer.concat([Buffer.of(0x00), Buffer.from(pick(TAGS), "hex")]));
      else if (roll < 0.7) parts.push(Buffer.of(pick(TREE_ALPHABET)));
      else parts.push(Buffer.of(Math.floor(random() * 256)));
    }
    return {
      name: `random tree #${index}`,
      proof: Buffer.concat(parts),
      digest: Buffer.from(digest),
    };
  });
}

const INSERTED_BYTES = [0x00, 0xff, 0x80, 0xf0];

function mutations(label: string, fixture: Buffer, base: Omit<Case, "name" | "proof">): Case[] {
  const cases: Case[] = [{ ...base, name: `${label} as is`, proof: fixture }];
  for (let length = 0; length < fixture.length; length++) {
    cases.push({ ...base, name: `${label} cut to ${length}`, proof: fixture.subarray(0, length) });
  }
  for (let at = 0; at <= fixture.length; at++) {
    for (const byte of INSERTED_BYTES) {
      const proof = Buffer.concat([fixture.subarray(0, at), Buffer.of(byte), fixture.subarray(at)]);
      cases.push({
        ...base,
        name: `${label} with 0x${byte.toString(16)} inserted at ${at}`,
        proof,
      });
    }
  }
  for (let at = 0; at < fixture.length; at++) {
    const without = Buffer.concat([fixture.subarray(0, at), fixture.subarray(at + 1)]);
    cases.push({ ...base, name: `${label} without byte ${at}`, proof: without });
    const flipped = Buffer.from(fixture);
    flipped[at]! ^= 0x80;
    cases.push({ ...base, name: `${label} with byte ${at} xor 0x80`, proof: flipped });
  }
  return cases;
}

const CASES: Case[] = [
  ...shortInputs(),
  ...edgeInputs(),
  ...randomGarbage(2000),
  ...randomTrees(3000),
  ...mutations("hello-world.txt.ots", HELLO, { digest: HELLO_DIGEST, header: helloHeader }),
  ...mutations("known-and-unknown-notary.txt.ots", NOTARY, { digest: Buffer.from(NOTARY_DIGEST) }),
];

function expectedOf(c: Case): OracleResult {
  const headers = new Map(c.header === undefined ? [] : [[c.header.height, c.header.bytes]]);
  return oracleVerify(c.proof, c.digest, headers);
}

interface Comparable {
  status: string;
  code: string;
  file_digest: string;
  attestations: unknown[];
  confirmed: number | bigint | null;
}

function fromOracle(result: OracleResult): Comparable {
  const { status, code, file_digest, attestations } = result;
  return { status, code, file_digest, attestations, confirmed: result.confirmedHeight ?? null };
}

function fromLibrary(result: AnchorResult): Comparable {
  const { status, code, file_digest, attestations } = result;
  return {
    status,
    code,
    file_digest,
    attestations,
    confirmed: result.confirmed?.block_height ?? null,
  };
}

/** Every `stride`-th case plus every short and hand-built one: the sample for CLI and HTTP. */
function sample(stride: number): Case[] {
  const firstGenerated = shortInputs().length + edgeInputs().length;
  return CASES.filter((_, index) => index < firstGenerated || index % stride === 0);
}

function tally(results: { name: string; agrees: boolean }[]): string[] {
  return results.filter((result) => !result.agrees).map((result) => result.name);
}

describe("OpenTimestamps: the verifier agrees with the spec oracle", () => {
  test("the oracle reads the real fixtures as the corpus README says", () => {
    const hello = oracleVerify(HELLO, HELLO_DIGEST, new Map([[HELLO_HEIGHT, HELLO_HEADER]]));
    assert.deepEqual(
      [hello.status, hello.code, hello.confirmedHeight],
      ["verified", "anchor_verified", HELLO_HEIGHT],
    );
    const notary = oracleVerify(NOTARY, NOTARY_DIGEST);
    assert.deepEqual([notary.status, notary.code], ["unverified", "anchor_pending"]);
    assert.deepEqual(
      notary.attestations.map((attestation) => attestation.kind),
      ["pending", "unknown"],
    );
    // The example: three zero bytes are a cut header, not a foreign file.
    assert.equal(oracleParseCode(Buffer.from("AAAA", "base64")), "truncated");
  });

  test("the cases cover every parse code the inputs can reach", (t) => {
    const codes = new Map<string, number>();
    for (const c of CASES) {
      const code = expectedOf(c).code;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    t.diagnostic(
      `${CASES.length} cases; oracle codes: ${JSON.stringify(Object.fromEntries(codes))}`,
    );
    for (const code of [
      "truncated",
      "bad_magic",
      "unsupported_version",
      "unknown_op",
      "unsupported_op",
      "invalid_varuint",
      "invalid_length",
      "trailing_data",
      "invalid_result",
      "recursion_limit",
      "too_many_nodes",
      "digest_mismatch",
      "header_mismatch",
      "anchor_verified",
      "anchor_unverified",
      "anchor_pending",
      "anchor_unknown_type",
    ]) {
      assert.ok((codes.get(code) ?? 0) > 0, `no case reaches ${code}`);
    }
  });

  test("library: status, code, file digest, attestations and confirmation, every case", (t) => {
    const results = CASES.map((c) => {
      const expected = fromOracle(expectedOf(c));
      const headers = new Map(c.header === undefined ? [] : [[c.header.height, c.header.bytes]]);
      const actual = fromLibrary(verifyProof(c.proof, c.digest, headers));
      let agrees = true;
      try {
        assert.deepEqual(actual, expected);
      } catch {
        agrees = false;
      }
      return { name: c.name, agrees, actual, expected };
    });
    const disagreements = results.filter((result) => !result.agrees);
    t.diagnostic(`library: ${results.length - disagreements.length}/${results.length} agree`);
    const kinds = new Map<string, number>();
    for (const { actual, expected } of disagreements) {
      const kind = `${actual.code} where the oracle says ${expected.code}`;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    for (const [kind, count] of kinds) t.diagnostic(`  ${count} × ${kind}`);
    assert.deepEqual(
      disagreements.slice(0, 10).map(({ name, actual, expected }) => ({ name, actual, expected })),
      [],
    );
  });

  describe("through the CLI", () => {
    const workDir = mkdtempSync(join(tmpdir(), "receiptd-ots-differential-"));
    after(() => rmSync(workDir, { recursive: true, force: true }));

    test("status, code and exit status for a sample of the cases", async (t) => {
      const cases = sample(40);
      const proofPath = join(workDir, "proof.ots");
      const results: { name: string; agrees: boolean }[] = [];
      for (const c of cases) {
        writeFileSync(proofPath, c.proof);
        const argv = ["verify", proofPath, "--digest", c.digest.toString("hex"), "--json"];
        if (c.header !== undefined) {
          argv.push(
            "--header",
            c.header.bytes.toString("hex"),
            "--height",
            String(c.header.height),
          );
        }
        let stdout = "";
        const exit = await main(argv, {
          stdout: (text) => {
            stdout += text;
          },
          stderr: () => {},
        });
        const printed = JSON.parse(stdout) as { status: string; code: string };
        const expected = expectedOf(c);
        const agrees =
          printed.status === expected.status &&
          printed.code === expected.code &&
          exit === (expected.status === "verified" ? 0 : 1);
        results.push({ name: `${c.name}: ${printed.status}/${printed.code} exit ${exit}`, agrees });
      }
      t.diagnostic(`CLI: ${results.length - tally(results).length}/${results.length} agree`);
      assert.deepEqual(tally(results).slice(0, 10), []);
    });
  });

  test("through the built binary: a handful of the short and hand-built cases", (t) => {
    const bin = fileURLToPath(
      new URL("../../../dist/src/cli/continuity-receipt-anchor.js", import.meta.url),
    );
    assert.ok(existsSync(bin), `${bin} is missing: run npm run build`);
    const workDir = mkdtempSync(join(tmpdir(), "receiptd-ots-binary-"));
    try {
      const picked = [
        ...shortInputs().filter((_, index) => index % 9 === 0),
        ...edgeInputs().slice(0, 8),
      ];
      for (const c of picked) {
        const proofPath = join(workDir, "proof.ots");
        writeFileSync(proofPath, c.proof);
        const run = spawnSync(
          process.execPath,
          [bin, "verify", proofPath, "--digest", c.digest.toString("hex"), "--json"],
          { encoding: "utf8" },
        );
        const printed = JSON.parse(run.stdout) as { status: string; code: string };
        const expected = expectedOf(c);
        assert.deepEqual(
          [printed.status, printed.code, run.status],
          [expected.status, expected.code, expected.status === "verified" ? 0 : 1],
          c.name,
        );
      }
      t.diagnostic(`binary: ${picked.length}/${picked.length} agree`);
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  });

  describe("through POST /verify-anchor over HTTP", () => {
    let service: TestService;
    let url: string;
    before(async () => {
      service = await startTestService();
      await service.app.listen({ host: "127.0.0.1", port: 0 });
      const { port } = service.app.server.address() as AddressInfo;
      url = `http://127.0.0.1:${port}/verify-anchor`;
    });
    after(() => service.close());

    test("200 with the oracle's status and code for a sample of the cases", async (t) => {
      const cases = sample(20);
      const results: { name: string; agrees: boolean }[] = [];
      for (const c of cases) {
        const body: Record<string, unknown> = {
          proof: c.proof.toString("base64"),
          digest: `sha256:${c.digest.toString("hex")}`,
        };
        if (c.header !== undefined) {
          body.headers = { [String(c.header.height)]: c.header.bytes.toString("hex") };
        }
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...service.authHeaders },
          body: JSON.stringify(body),
        });
        const answer = (await response.json()) as { status: string; code: string };
        const expected = expectedOf(c);
        const agrees =
          response.status === 200 &&
          answer.status === expected.status &&
          answer.code === expected.code;
        results.push({
          name: `${c.name}: ${response.status} ${answer.status}/${answer.code}`,
          agrees,
        });
      }
      t.diagnostic(`HTTP: ${results.length - tally(results).length}/${results.length} agree`);
      assert.deepEqual(tally(results).slice(0, 10), []);
    });
  });
});
