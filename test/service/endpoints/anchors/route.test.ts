/** Anchor hosting (service.md §2): `POST /anchors` through the anchors queue, `GET /anchors/{digest}`. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { otsProof, pendingProof, sha256, upgradedProof } from "../../../../bench/support/ots.js";
import { type AnchorJob, anchorsProcessor } from "../../../../queues/anchors.js";
import { keyPrincipal } from "../../../../src/access/principal.js";
import { prepareAnchorPost } from "../../../../src/service/endpoints/anchors/answer.js";
import { readUsage } from "../../../../src/storage/usage.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const JSON_TYPE = "application/json; charset=utf-8";
const HELLO_PROOF = corpusBytes("vectors/anchor/hello-world.txt.ots");
const HELLO_DIGEST = `sha256:${sha256(corpusBytes("vectors/anchor/hello-world.txt")).toString("hex")}`;
const RFC3339_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

let counter = 0;
/** A digest no other test uses, as raw bytes and as `sha256:<hex>`. */
function freshDigest(): { bytes: Buffer; id: string } {
  counter += 1;
  const bytes = sha256(`anchors test document ${counter}`);
  return { bytes, id: `sha256:${bytes.toString("hex")}` };
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

interface StoredDocument {
  digest: string;
  proof: string;
  note: string | null;
  status: string;
  stored_at: string;
  attestations: { kind: string; value?: unknown }[];
}

describe("anchor hosting", () => {
  let service: TestService;
  const post = (payload: unknown) =>
    service.app.inject({
      method: "POST",
      url: "/anchors",
      headers: { "content-type": "application/json" },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
  const get = (digest: string, headers: Record<string, string> = {}) =>
    service.app.inject({ method: "GET", url: `/anchors/${digest}`, headers });
  const stored = async (digest: string) => {
    const response = await get(digest);
    assert.equal(response.statusCode, 200, response.body);
    return { body: response.body, document: response.json<StoredDocument>() };
  };
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  describe("POST /anchors", () => {
    test("a new proof is stored: 200 once durable, then served as a document", async () => {
      const response = await post({ digest: HELLO_DIGEST, proof: b64(HELLO_PROOF), note: "hi" });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.equal(
        response.body,
        JSON.stringify({
          stored: true,
          digest: HELLO_DIGEST,
          status: "unverified",
          bytes: HELLO_PROOF.length,
          outcome: "created",
        }),
      );
      const { body, document } = await stored(HELLO_DIGEST);
      assert.match(document.stored_at, RFC3339_SECONDS);
      assert.equal(
        body,
        JSON.stringify({
          digest: HELLO_DIGEST,
          proof: b64(HELLO_PROOF),
          note: "hi",
          status: "unverified",
          stored_at: document.stored_at,
          attestations: [{ kind: "bitcoin", value: 358391 }],
        }),
      );
    });

    test("the same proof again is idempotent: nothing is rewritten, a new note is ignored", async () => {
      const { bytes, id } = freshDigest();
      const proof = b64(pendingProof(bytes));
      assert.equal((await post({ digest: id, proof, note: "first" })).json().outcome, "created");
      const before = await stored(id);
      const again = await post({ digest: id, proof, note: "second" });
      assert.equal(again.statusCode, 200);
      assert.deepEqual(again.json(), {
        stored: true,
        digest: id,
        status: "unverified",
        bytes: pendingProof(bytes).length,
        outcome: "unchanged",
      });
      assert.equal((await stored(id)).body, before.body);
    });

    test("an upgraded proof (more attestations) replaces the stored one and keeps its note", async () => {
      const { bytes, id } = freshDigest();
      await post({ digest: id, proof: b64(pendingProof(bytes)), note: "kept note" });
      const upgraded = upgradedProof(bytes);
      const response = await post({ digest: id, proof: b64(upgraded) });
      assert.deepEqual(response.json(), {
        stored: true,
        digest: id,
        status: "unverified",
        bytes: upgraded.length,
        outcome: "replaced",
      });
      const { document } = await stored(id);
      assert.equal(document.proof, b64(upgraded));
      assert.equal(document.note, "kept note");
      assert.deepEqual(document.attestations, [
        { kind: "pending", value: "https://alice.btc.calendar.opentimestamps.org" },
        { kind: "bitcoin", value: 358391 },
      ]);
      // A note sent with an upgrade replaces the old one.
      const further = otsProof(bytes, {
        calendars: ["https://a.example", "https://b.example"],
        bitcoinHeight: 9,
      });
      await post({ digest: id, proof: b64(further), note: "new note" });
      assert.equal((await stored(id)).document.note, "new note");
    });

    test("a proof with no more attestations than the stored one is not stored", async () => {
      const { bytes, id } = freshDigest();
      const upgraded = upgradedProof(bytes);
      await post({ digest: id, proof: b64(upgraded) });
      const before = await stored(id);
      for (const proof of [
        pendingProof(bytes),
        otsProof(bytes, { calendars: ["https://a.example", "https://b.example"] }),
      ]) {
        const response = await post({ digest: id, proof: b64(proof), note: "ignored" });
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), {
          stored: true,
          digest: id,
          status: "unverified",
          bytes: upgraded.length,
          outcome: "kept",
        });
      }
      assert.equal((await stored(id)).body, before.body);
    });

    test("concurrent upgrades settle on the proof with the most attestations", async () => {
      const { bytes, id } = freshDigest();
      await post({ digest: id, proof: b64(pendingProof(bytes)) });
      const calendars = ["https://a.example", "https://b.example", "https://c.example"];
      const proofs = [2, 3, 4].map((count) =>
        otsProof(bytes, { calendars: calendars.slice(0, count - 1), bitcoinHeight: count }),
      );
      const responses = await Promise.all(
        proofs.map((proof) => post({ digest: id, proof: b64(proof) })),
      );
      assert.deepEqual(
        responses.map((response) => response.statusCode),
        [200, 200, 200],
      );
      const { document } = await stored(id);
      assert.equal(document.proof, b64(proofs[2]!));
      assert.equal(document.attestations.length, 4);
    });

    test("an upper-case digest is stored under its lower-case id", async () => {
      const { bytes, id } = freshDigest();
      const upper = `sha256:${bytes.toString("hex").toUpperCase()}`;
      const response = await post({ digest: upper, proof: b64(pendingProof(bytes)), note: null });
      assert.equal(response.json().digest, id);
      assert.equal((await stored(upper)).document.digest, id);
      assert.equal((await stored(id)).document.note, null);
    });

    test("a note of 512 characters is accepted (characters, not UTF-16 units)", async () => {
      const { bytes, id } = freshDigest();
      const note = "\u{1F600}".repeat(512);
      const response = await post({ digest: id, proof: b64(pendingProof(bytes)), note });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal((await stored(id)).document.note, note);
    });

    test("a block height beyond 2^53 - 1 is stored exactly, also after a trip through JSON", async () => {
      const { bytes, id } = freshDigest();
      const height = 2n ** 60n + 7n;
      const proof = otsProof(bytes, { calendars: [], bitcoinHeight: Number.MAX_SAFE_INTEGER });
      // Replace the height's varuint (the proof's last 8 bytes) by the one of 2^60 + 7.
      const hugeHeight = Buffer.concat([
        proof.subarray(0, -9),
        Buffer.from([9, 0x87, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]),
      ]);
      const response = await post({ digest: id, proof: b64(hugeHeight) });
      assert.equal(response.statusCode, 200, response.body);
      assert.match(
        (await stored(id)).body,
        /"attestations":\[\{"kind":"bitcoin","value":1152921504606846983\}\]\}$/,
      );

      // What a BullMQ worker receives: the job as JSON text, parsed again.
      const other = freshDigest();
      const prepared = prepareAnchorPost(
        Buffer.from(
          JSON.stringify({
            digest: other.id,
            proof: b64(
              Buffer.concat([hugeHeight.subarray(0, 33), other.bytes, hugeHeight.subarray(65)]),
            ),
          }),
        ),
      );
      assert.ok("kind" in prepared, "a body that is not refused is a store request");
      const job = JSON.parse(JSON.stringify(prepared.job)) as AnchorJob;
      assert.deepEqual(job.attestations, [{ kind: "bitcoin", value: height.toString() }]);
      const outcome = await anchorsProcessor(service.app.documentStore)(job, "test-job");
      assert.equal(outcome.outcome, "created");
      assert.match((await stored(other.id)).body, /"value":1152921504606846983\}\]\}$/);
    });

    describe("400", () => {
      const { bytes, id } = freshDigest();
      const proof = b64(pendingProof(bytes));
      const other = freshDigest();
      const cases: [string, unknown, object][] = [
        [
          "a body that is not an object",
          "[]",
          { error: "bad_request", detail: "body must be an object {digest, proof, note?}" },
        ],
        [
          "a missing digest",
          { proof },
          { error: "bad_request", detail: "body must have required property 'digest'" },
        ],
        [
          "a missing proof",
          { digest: id },
          { error: "bad_request", detail: "body must have required property 'proof'" },
        ],
        [
          "an unknown member",
          { digest: id, proof, headers: {} },
          { error: "bad_request", detail: "body has an unexpected member 'headers'" },
        ],
        [
          "a note that is not a string",
          { digest: id, proof, note: 5 },
          { error: "bad_request", detail: "body/note must be string,null" },
        ],
        [
          "a note over 512 characters",
          { digest: id, proof, note: "n".repeat(513) },
          { error: "bad_request", detail: "body/note must NOT have more than 512 characters" },
        ],
        [
          "a proof that is not base64",
          { digest: id, proof: proof.slice(0, -1) },
          { error: "invalid_proof_encoding", detail: "proof must be standard base64 with padding" },
        ],
        [
          "a proof for another digest",
          { digest: other.id, proof },
          {
            error: "proof_rejected",
            code: "digest_mismatch",
            detail: `proof is for ${id}, expected digest is ${other.bytes.toString("hex")}`,
          },
        ],
        [
          "bytes that are not a proof",
          { digest: id, proof: b64(Buffer.from("not a proof, only some text of 40 bytes")) },
          {
            error: "proof_rejected",
            code: "bad_magic",
            detail: "not a detached OpenTimestamps proof",
          },
        ],
        [
          "bytes fewer than the header's",
          { digest: id, proof: b64(Buffer.from("not a proof")) },
          {
            error: "proof_rejected",
            code: "truncated",
            detail: "proof ends while reading the header magic (31 bytes needed, 11 left)",
          },
        ],
        [
          "a cut proof",
          { digest: id, proof: b64(pendingProof(bytes).subarray(0, 65)) },
          {
            error: "proof_rejected",
            code: "truncated",
            detail: "proof ends while reading an operation tag (1 bytes needed, 0 left)",
          },
        ],
        ["strict JSON violations", '{"digest":"a","digest":"b"}', { error: "invalid_json" }],
      ];
      for (const digest of [
        bytes.toString("hex"),
        "sha256:abc",
        `sha1:${bytes.toString("hex")}`,
        `${id}0`,
        7,
      ]) {
        cases.push([
          `digest ${JSON.stringify(digest)}`,
          { digest, proof },
          typeof digest === "string"
            ? { error: "invalid_digest", detail: "digest must be sha256: and 64 hex digits" }
            : { error: "bad_request", detail: "body/digest must be string" },
        ]);
      }
      for (const [name, payload, expected] of cases) {
        test(name, async () => {
          const response = await post(payload);
          assert.equal(response.statusCode, 400, response.body);
          assert.equal(response.headers["content-type"], JSON_TYPE);
          const body = response.json();
          if ("detail" in expected) assert.deepEqual(body, expected);
          else assert.equal(body.error, "invalid_json");
        });
      }
      test("nothing was stored for a refused request", async () => {
        assert.equal((await get(id)).statusCode, 404);
      });
    });

    test("a store failure is 503 anchor_store_unavailable, stores nothing, and can be retried", async () => {
      const { bytes, id } = freshDigest();
      const store = service.app.documentStore;
      const create = store.create;
      store.create = async () => {
        throw new Error("disk failure");
      };
      try {
        const response = await post({ digest: id, proof: b64(pendingProof(bytes)) });
        assert.equal(response.statusCode, 503);
        assert.equal(response.headers["retry-after"], "1");
        assert.deepEqual(response.json(), {
          error: "anchor_store_unavailable",
          detail: "the anchor store could not complete the write; nothing is half-stored, retry",
        });
      } finally {
        store.create = create;
      }
      assert.deepEqual((await get(id)).json(), { error: "anchor_not_found" });
      assert.equal(
        (await post({ digest: id, proof: b64(pendingProof(bytes)) })).json().outcome,
        "created",
      );
    });

    test("a write the queue has not finished within the wait is 202 with a status URL", async () => {
      const { bytes, id } = freshDigest();
      const queue = service.app.anchorsQueue;
      const submit = queue.submit;
      queue.submit = async (jobId) => ({ state: "pending", jobId });
      try {
        const response = await post({ digest: id, proof: b64(pendingProof(bytes)) });
        assert.equal(response.statusCode, 202);
        assert.equal(response.headers.location, `/anchors/${id}`);
        assert.deepEqual(response.json(), {
          stored: false,
          digest: id,
          status_url: `/anchors/${id}`,
        });
      } finally {
        queue.submit = submit;
      }
    });
  });

  describe("GET /anchors/{digest}", () => {
    let id: string;
    let etag: string;
    before(async () => {
      const digest = freshDigest();
      id = digest.id;
      await post({ digest: id, proof: b64(pendingProof(digest.bytes)) });
      etag = String((await get(id)).headers.etag);
    });

    test("200 with a strong ETag of the bytes and public caching", async () => {
      const response = await get(id);
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.equal(response.headers["cache-control"], "public, max-age=300");
      assert.equal(
        response.headers.etag,
        `"${createHash("sha256").update(response.rawPayload).digest("hex")}"`,
      );
    });

    test("a percent-encoded colon and upper-case hex find the same document", async () => {
      const hex = id.slice("sha256:".length);
      for (const spelling of [
        `sha256%3A${hex}`,
        `sha256%3a${hex}`,
        `sha256:${hex.toUpperCase()}`,
      ]) {
        const response = await get(spelling);
        assert.equal(response.statusCode, 200, spelling);
        assert.equal(response.headers.etag, etag);
      }
    });

    test("304 for a matching If-None-Match: exact, in a list, weak, or *", async () => {
      for (const ifNoneMatch of [etag, `"other", ${etag}`, `W/${etag}`, `W/"x",W/${etag}`, "*"]) {
        const response = await get(id, { "if-none-match": ifNoneMatch });
        assert.equal(response.statusCode, 304, ifNoneMatch);
        assert.equal(response.body, "");
        assert.equal(response.headers.etag, etag);
        assert.equal(response.headers["cache-control"], "public, max-age=300");
      }
    });

    test("200 when If-None-Match does not match", async () => {
      for (const ifNoneMatch of ['"other"', `${etag.slice(0, -2)}"`, 'W/"x"']) {
        const response = await get(id, { "if-none-match": ifNoneMatch });
        assert.equal(response.statusCode, 200, ifNoneMatch);
      }
    });

    test("404 anchor_not_found for a digest never stored", async () => {
      const response = await get(freshDigest().id);
      assert.equal(response.statusCode, 404);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.deepEqual(response.json(), { error: "anchor_not_found" });
    });

    test("400 invalid_digest for any other form", async () => {
      const hex = id.slice("sha256:".length);
      for (const digest of [
        hex,
        "sha256:abc",
        `sha1:${hex}`,
        `${id}00`,
        `SHA256:${hex}`,
        "sha256%3A",
        `sha256:${hex.slice(1)}g`,
      ]) {
        const response = await get(digest);
        assert.equal(response.statusCode, 400, digest);
        assert.deepEqual(response.json(), {
          error: "invalid_digest",
          detail: "digest must be sha256: and 64 hex digits",
        });
      }
    });
  });

  test("the OpenAPI document describes the anchor routes", async () => {
    const document = (await service.app.inject({ method: "GET", url: "/openapi.json" })).json();
    assert.ok(document.paths["/verify-anchor"].post.requestBody);
    assert.ok(document.paths["/anchors"].post.requestBody);
    assert.deepEqual(Object.keys(document.paths["/anchors/{digest}"].get.responses).sort(), [
      "200",
      "304",
      "400",
      "404",
      "429",
      "500",
      "503",
    ]);
  });
});

describe("anchor quotas (issues 24 and 34)", () => {
  // Every pending proof's stored document has the same length (set in `before`, from one
  // stored by the service's own key): room for two per principal, not three.
  let proofLength = 0;
  let quota = 0;
  let service: TestService;
  let base: string;
  const key = async (dailyCap = 1000) => {
    const created = await service.app.accessServices.keys.create({
      name: `anchors-quota-${++counter}`,
      dailyCap,
    });
    return { key: created.key, principal: keyPrincipal(created.record.id) };
  };
  const send = async (path: string, who: string, payload: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": who },
      body: JSON.stringify(payload),
    });
    return {
      statusCode: response.status,
      json: (await response.json()) as Record<string, unknown>,
    };
  };
  const postAnchor = (who: string, digest: { bytes: Buffer; id: string }) =>
    send("/anchors", who, { digest: digest.id, proof: b64(pendingProof(digest.bytes)) });
  const held = (principal: string) =>
    readUsage(service.app.documentStore, "anchors", "principal", principal);

  before(async () => {
    // Measured first, on a service without a quota worth the name: the quota is what a
    // principal's anchors take in the store, the document, not the proof.
    const measuring = await startTestService();
    const digest = freshDigest();
    const posted = await measuring.app.inject({
      method: "POST",
      url: "/anchors",
      payload: { digest: digest.id, proof: b64(pendingProof(digest.bytes)) },
    });
    assert.equal(posted.statusCode, 200, posted.body);
    const stored = await measuring.app.inject({ method: "GET", url: `/anchors/${digest.id}` });
    proofLength = stored.rawPayload.length;
    await measuring.close();
    assert.ok(
      proofLength > pendingProof(digest.bytes).length,
      "a document is larger than its proof",
    );
    quota = 2 * proofLength + Math.floor(proofLength / 2);
    service = await startTestService({
      limits: { anchorPrincipalQuotaBytes: quota, anchorEvaluationQuotaBytes: proofLength },
    });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
  });
  after(() => service.close());

  test("/info publishes the quotas", async () => {
    const info = (await (await fetch(`${base}/info`)).json()) as {
      limits: { anchor_quota_bytes_per_key: number; anchor_quota_bytes_per_evaluation_key: number };
    };
    assert.equal(info.limits.anchor_quota_bytes_per_key, quota);
    assert.equal(info.limits.anchor_quota_bytes_per_evaluation_key, proofLength);
  });

  test("the charge is the stored document's bytes, and an evaluation key has its own quota", async () => {
    const alice = await key();
    const first = freshDigest();
    assert.equal((await postAnchor(alice.key, first)).statusCode, 200);
    const stored = await fetch(`${base}/anchors/${first.id}`);
    assert.equal(await held(alice.principal), (await stored.arrayBuffer()).byteLength);

    const evaluation = await service.app.accessServices.keys.createEvaluation({
      dailyCap: 100,
      lifetimeMs: 3_600_000,
    });
    const who = evaluation.key;
    assert.equal((await postAnchor(who, freshDigest())).statusCode, 200);
    const refused = await postAnchor(who, freshDigest());
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json.error, "anchor_quota_exceeded");
    assert.equal(refused.json.limit, proofLength);
    assert.match(String(refused.json.detail), /ANCHOR_EVALUATION_KEY_QUOTA_BYTES/);
  });

  test("a principal past its quota is refused with the limit, before anything is queued; another is not", async () => {
    const alice = await key();
    const bob = await key();
    assert.equal((await postAnchor(alice.key, freshDigest())).statusCode, 200);
    assert.equal((await postAnchor(alice.key, freshDigest())).statusCode, 200);
    const third = freshDigest();
    const refused = await postAnchor(alice.key, third);
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json.error, "anchor_quota_exceeded");
    assert.equal(refused.json.limit, quota);
    assert.equal(refused.json.held, 2 * proofLength);
    assert.match(String(refused.json.detail), /ANCHOR_KEY_QUOTA_BYTES/);
    assert.equal((await fetch(`${base}/anchors/${third.id}`)).status, 404);
    assert.equal(await held(alice.principal), 2 * proofLength);

    assert.equal((await postAnchor(bob.key, third)).statusCode, 200);
    assert.equal(await held(bob.principal), proofLength);
  });

  test("an identical proof posted by two principals at once charges both", async () => {
    const carol = await key();
    const dave = await key();
    const shared = freshDigest();
    const answers = await Promise.all([
      postAnchor(carol.key, shared),
      postAnchor(dave.key, shared),
    ]);
    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [200, 200],
    );
    assert.equal(await held(carol.principal), proofLength);
    assert.equal(await held(dave.principal), proofLength);
  });

  test("a write the store could not complete (503) gives its charge back", async () => {
    const frank = await key();
    const store = service.app.documentStore;
    const create = store.create;
    store.create = async () => {
      throw new Error("disk failure");
    };
    try {
      assert.equal((await postAnchor(frank.key, freshDigest())).statusCode, 503);
    } finally {
      store.create = create;
    }
    assert.equal(await held(frank.principal), 0);
  });

  test("refusals are not charged against the daily cap", async () => {
    // Two stored anchors and one verification fill a cap of 3; two refusals in between must not.
    const erin = await key(3);
    assert.equal((await postAnchor(erin.key, freshDigest())).statusCode, 200);
    assert.equal((await postAnchor(erin.key, freshDigest())).statusCode, 200);
    assert.equal((await postAnchor(erin.key, freshDigest())).statusCode, 403);
    assert.equal((await postAnchor(erin.key, freshDigest())).statusCode, 403);
    const digest = freshDigest();
    const verified = await send("/verify-anchor", erin.key, {
      digest: digest.id,
      proof: b64(pendingProof(digest.bytes)),
    });
    assert.equal(verified.statusCode, 200, JSON.stringify(verified.json));
    const capped = await send("/verify-anchor", erin.key, {
      digest: digest.id,
      proof: b64(pendingProof(digest.bytes)),
    });
    assert.equal(capped.statusCode, 429);
  });
});
