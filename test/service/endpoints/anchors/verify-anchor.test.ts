/** `POST /verify-anchor` (service.md §1): real proofs from the corpus, every answer shape. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { headerWith, sha256, upgradedProof } from "../../../../bench/support/ots.js";
import { answerVerifyAnchor } from "../../../../src/service/verification/anchor-answer.js";
import { fromPlain } from "../../../../src/verifier/json/value.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const HELLO_PROOF = corpusBytes("vectors/anchor/hello-world.txt.ots").toString("base64");
const HELLO_DIGEST = sha256(corpusBytes("vectors/anchor/hello-world.txt")).toString("hex");
const HELLO_HEIGHT = 358391;
const HELLO_HEADER = (
  JSON.parse(corpusBytes("vectors/anchor/headers.json").toString("utf8")) as {
    headers: Record<string, string>;
  }
).headers[String(HELLO_HEIGHT)]!;
const NOTARY_PROOF = corpusBytes("vectors/anchor/known-and-unknown-notary.txt.ots");

const SCOPE_NOTE =
  "only merkle-root equality with the supplied headers was checked (no proof-of-work or header-chain validation)";
const SERVICE = "continuity-receipt-verify";
const HELLO_ATTESTATIONS = [{ kind: "bitcoin", value: HELLO_HEIGHT }];

const HELLO_VERIFIED = {
  status: "verified",
  code: "anchor_verified",
  detail: `bitcoin attestation matches the merkle root of the header at height ${HELLO_HEIGHT}; ${SCOPE_NOTE}`,
  file_digest: `sha256:${HELLO_DIGEST}`,
  attestations: HELLO_ATTESTATIONS,
  confirmed: {
    block_height: HELLO_HEIGHT,
    merkle_root: "007ee445d23ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a",
    header_time: 1432827678,
  },
  service: SERVICE,
};

describe("POST /verify-anchor", () => {
  let service: TestService;
  const post = (payload: unknown) =>
    service.app.inject({
      method: "POST",
      url: "/verify-anchor",
      headers: { "content-type": "application/json" },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
  const expectAnswer = async (payload: unknown, statusCode: number, body: unknown) => {
    const response = await post(payload);
    assert.equal(response.statusCode, statusCode, response.body);
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    assert.deepEqual(response.json(), body);
    return response;
  };
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  describe("200: the verifier's AnchorResult plus service", () => {
    test("hello-world.txt.ots with its header given as headers, members in order", async () => {
      const response = await expectAnswer(
        { proof: HELLO_PROOF, digest: `sha256:${HELLO_DIGEST}`, headers: { 358391: HELLO_HEADER } },
        200,
        HELLO_VERIFIED,
      );
      assert.deepEqual(Object.keys(response.json()), Object.keys(HELLO_VERIFIED));
    });

    test("the same with a single header + height, bare hex and upper-case digests", async () => {
      for (const digest of [HELLO_DIGEST, HELLO_DIGEST.toUpperCase(), `0x${HELLO_DIGEST}`]) {
        await expectAnswer(
          { proof: HELLO_PROOF, digest, header: HELLO_HEADER, height: HELLO_HEIGHT },
          200,
          HELLO_VERIFIED,
        );
      }
    });

    test("headers at several heights: the one at the attestation's height decides", async () => {
      await expectAnswer(
        {
          proof: HELLO_PROOF,
          digest: HELLO_DIGEST,
          headers: { "0": headerWith(Buffer.alloc(32)).toString("hex"), 358391: HELLO_HEADER },
        },
        200,
        HELLO_VERIFIED,
      );
    });

    test("without headers a bitcoin attestation is unverified", async () => {
      for (const extra of [{}, { headers: {} }]) {
        await expectAnswer({ proof: HELLO_PROOF, digest: HELLO_DIGEST, ...extra }, 200, {
          status: "unverified",
          code: "anchor_unverified",
          detail: `bitcoin attestation at heights ${HELLO_HEIGHT} but no block headers were supplied`,
          file_digest: `sha256:${HELLO_DIGEST}`,
          attestations: HELLO_ATTESTATIONS,
          service: SERVICE,
        });
      }
    });

    test("a header with another merkle root is a header_mismatch that names the scope", async () => {
      const wrong = `${HELLO_HEADER.slice(0, 80)}00${HELLO_HEADER.slice(82)}`;
      await expectAnswer(
        { proof: HELLO_PROOF, digest: HELLO_DIGEST, header: wrong, height: HELLO_HEIGHT },
        200,
        {
          status: "mismatch",
          code: "header_mismatch",
          detail: `no bitcoin attestation (heights ${HELLO_HEIGHT}) matches the merkle root of a supplied header at its height; ${SCOPE_NOTE}`,
          file_digest: `sha256:${HELLO_DIGEST}`,
          attestations: HELLO_ATTESTATIONS,
          service: SERVICE,
        },
      );
    });

    test("a proof for another digest is a digest_mismatch", async () => {
      const other = sha256("another document").toString("hex");
      await expectAnswer({ proof: HELLO_PROOF, digest: other }, 200, {
        status: "mismatch",
        code: "digest_mismatch",
        detail: `proof is for sha256:${HELLO_DIGEST}, expected digest is ${other}`,
        file_digest: `sha256:${HELLO_DIGEST}`,
        attestations: HELLO_ATTESTATIONS,
        service: SERVICE,
      });
    });

    test("a pending proof with an unknown notary is anchor_pending", async () => {
      const digest = NOTARY_PROOF.subarray(33, 65).toString("hex");
      const response = await expectAnswer({ proof: NOTARY_PROOF.toString("base64"), digest }, 200, {
        status: "unverified",
        code: "anchor_pending",
        detail:
          "no bitcoin attestation yet, only pending calendar attestations; upgrade the proof later",
        file_digest: `sha256:${digest}`,
        attestations: [
          { kind: "pending", value: "https://bob.btc.calendar.opentimestamps.org" },
          {
            kind: "unknown",
            tag: "0102030405060708",
            payload: Buffer.from("x".repeat(46)).toString("hex"),
          },
        ],
        service: SERVICE,
      });
      assert.equal(response.json().attestations.length, 2);
    });

    test("an upgraded proof verifies against a header holding its merkle root", async () => {
      const digest = sha256("upgraded");
      const response = await post({
        proof: upgradedProof(digest, 7).toString("base64"),
        digest: digest.toString("hex"),
        headers: { 7: headerWith(sha256(digest), 1_600_000_000).toString("hex") },
      });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json().confirmed, {
        block_height: 7,
        merkle_root: sha256(digest).toString("hex"),
        header_time: 1_600_000_000,
      });
    });

    test("what the verifier judges stays a 200 result: bad_digest, bad_header, parse codes", async () => {
      const invalid = (code: string, detail: string, file_digest = "", attestations = []) => ({
        status: "invalid",
        code,
        detail,
        file_digest,
        attestations,
        service: SERVICE,
      });
      await expectAnswer(
        { proof: HELLO_PROOF, digest: "sha1:abcd" },
        200,
        invalid(
          "bad_digest",
          "expected digest must be raw bytes or hex, optionally prefixed with sha256: or 0x",
        ),
      );
      await expectAnswer(
        { proof: HELLO_PROOF, digest: HELLO_DIGEST, header: HELLO_HEADER.slice(2), height: 1 },
        200,
        {
          ...invalid(
            "bad_header",
            "header for height 1 is 79 bytes, expected 80",
            `sha256:${HELLO_DIGEST}`,
          ),
          attestations: HELLO_ATTESTATIONS,
        },
      );
      await expectAnswer(
        { proof: Buffer.alloc(40, 0x68).toString("base64"), digest: HELLO_DIGEST },
        200,
        invalid("bad_magic", "not a detached OpenTimestamps proof"),
      );
      // Fewer bytes than the header: the reference reads the header whole before comparing.
      await expectAnswer(
        { proof: "AAAA", digest: HELLO_DIGEST },
        200,
        invalid("truncated", "proof ends while reading the header magic (31 bytes needed, 3 left)"),
      );
      await expectAnswer(
        { proof: "", digest: HELLO_DIGEST },
        200,
        invalid("truncated", "proof ends while reading the header magic (31 bytes needed, 0 left)"),
      );
    });
  });

  describe("400: requests that cannot be decoded", () => {
    const base = { proof: HELLO_PROOF, digest: HELLO_DIGEST };
    const cases: [string, unknown, { error: string; detail: string }][] = [
      [
        "a body that is not an object",
        [base],
        { error: "bad_request", detail: "body must be an object {proof, digest, headers?}" },
      ],
      [
        "a missing proof",
        { digest: HELLO_DIGEST },
        { error: "bad_request", detail: "body must have required property 'proof'" },
      ],
      [
        "a missing digest",
        { proof: HELLO_PROOF },
        { error: "bad_request", detail: "body must have required property 'digest'" },
      ],
      [
        "a digest that is not a string",
        { ...base, digest: 5 },
        { error: "bad_request", detail: "body/digest must be string" },
      ],
      [
        "a proof that is not a string",
        { ...base, proof: [1, 2] },
        { error: "bad_request", detail: "body/proof must be string" },
      ],
      [
        "an unknown member",
        { ...base, header_hex: HELLO_HEADER },
        { error: "bad_request", detail: "body has an unexpected member 'header_hex'" },
      ],
      [
        "headers that are not an object",
        { ...base, headers: [HELLO_HEADER] },
        { error: "bad_request", detail: "body/headers must be object" },
      ],
      [
        "a header in headers that is not a string",
        { ...base, headers: { 1: 5 } },
        { error: "bad_request", detail: "body/headers/1 must be string" },
      ],
      [
        "both headers and header",
        { ...base, headers: {}, header: HELLO_HEADER, height: 1 },
        { error: "bad_request", detail: "give either headers or header with height, not both" },
      ],
      [
        "a header without its height",
        { ...base, header: HELLO_HEADER },
        { error: "bad_request", detail: "header needs its height" },
      ],
      [
        "a height without a header",
        { ...base, height: 1 },
        { error: "bad_request", detail: "height is given without a header" },
      ],
    ];
    const proofEncoding = {
      error: "invalid_proof_encoding",
      detail: "proof must be standard base64 with padding",
    };
    for (const proof of [
      "not base64!",
      HELLO_PROOF.replace(/=+$/, ""),
      Buffer.from([0xfb, 0xff]).toString("base64url"),
      ` ${HELLO_PROOF}`,
      // "hello" is aGVsbG8=; a non-zero padding bit gives a second spelling of the same bytes.
      "aGVsbG9=",
    ]) {
      cases.push([
        `proof ${JSON.stringify(proof.slice(0, 12))}`,
        { ...base, proof },
        proofEncoding,
      ]);
    }
    for (const [name, member, where] of [
      ["non-hex header", { header: "zz".repeat(80), height: 1 }, "header"],
      ["odd-length header", { header: HELLO_HEADER.slice(1), height: 1 }, "header"],
      [
        "non-hex header in headers",
        { headers: { 5: `${HELLO_HEADER.slice(2)}g0` } },
        "headers['5']",
      ],
    ] as const) {
      cases.push([
        name,
        { ...base, ...member },
        {
          error: "invalid_header_encoding",
          detail: `${where} must be hex (an even number of hex digits)`,
        },
      ]);
    }
    for (const key of ["01", "-1", "1.5", "x", "", "9007199254740992"]) {
      cases.push([
        `headers key ${JSON.stringify(key)}`,
        { ...base, headers: { [key]: HELLO_HEADER } },
        { error: "invalid_height", detail: `headers key '${key}' is not a non-negative integer` },
      ]);
    }
    for (const height of [-1, 1.5, "7", null, 2 ** 53]) {
      cases.push([
        `height ${JSON.stringify(height)}`,
        { ...base, header: HELLO_HEADER, height },
        { error: "invalid_height", detail: "height must be a non-negative integer" },
      ]);
    }
    for (const [name, payload, body] of cases) {
      test(name, async () => {
        await expectAnswer(payload, 400, body);
      });
    }

    test("bodies that are not strict JSON are invalid_json", async () => {
      for (const text of ['{"proof":"", "proof":""}', "{", `${JSON.stringify(base)} x`]) {
        const response = await post(text);
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().error, "invalid_json");
        assert.equal(typeof response.json().detail, "string");
      }
    });
  });

  test("answerVerifyAnchor answers parsed bodies without `service` (for MCP)", () => {
    const answer = answerVerifyAnchor(
      fromPlain({ proof: HELLO_PROOF, digest: HELLO_DIGEST, headers: { 358391: HELLO_HEADER } }),
    );
    const { service: _service, ...withoutService } = HELLO_VERIFIED;
    assert.deepEqual(answer, { statusCode: 200, payload: withoutService });
    assert.deepEqual(answerVerifyAnchor(fromPlain({ proof: "@", digest: HELLO_DIGEST })), {
      statusCode: 400,
      payload: {
        error: "invalid_proof_encoding",
        detail: "proof must be standard base64 with padding",
      },
    });
  });
});
