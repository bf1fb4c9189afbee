/**
 * The requests of the recorded-answers test, in the order they are sent. Each service below is
 * a fresh embedded app over its own DATA_DIR holding the fixed identity (fixtures.ts) and a
 * fixed clock; keys are created in a fixed order. Order matters inside a service (daily caps
 * count down, stored documents appear), never between services.
 *
 * - `main`: the corpus deployed, payments off; every route's success forms and refusals;
 *   a few exchanges over a real socket at the end.
 * - `limited`: no corpus, an anonymous cap of 3 and a key with a cap of 2 (429s).
 * - `offered`: x402 on (`X402_PAY_TO`) without a facilitator: 402 challenges, payment
 *   refusals decided locally, 503 payments_unavailable.
 * - `unreachable`: x402 with a facilitator nobody listens at: 502.
 * - `paid`: x402 through the local facilitator peer: paid calls, receipts, passes, replays.
 * - `saturated`: one thread, one queue slot and a verify task that waits for a gate, so a
 *   third concurrent request is shed with 503 without depending on timing.
 * - `evaluation`: self-served evaluation keys with small terms (a key cap of 2, one key per
 *   address and two a day, 8 bits of work): the flow, each refusal, the key's cap and expiry.
 * - `evaluation-off`: the same routes with `EVALUATION_KEYS=off`.
 */
import { createServer } from "node:net";
import { BroadcastChannel } from "node:worker_threads";
import { keccak_256 } from "@noble/hashes/sha3";
import { privateKeyToAccount } from "viem/accounts";
import { pendingProof, upgradedProof } from "../../../bench/support/ots.js";
import { nodeSha256 } from "../../../src/access/evaluation/node-sha256.js";
import { startFacilitatorPeer } from "../../../src/payments/facilitator-peer.js";
import type { Hex } from "../../../src/payments/formats.js";
import { requirementFromWire } from "../../../src/payments/requirements.js";
import { solveProofOfWork } from "../../../src/portable/proof-of-work.js";
import { dumpCompact } from "../../../src/verifier/json/dump.js";
import { fromPlain, isObject } from "../../../src/verifier/json/value.js";
import { referenceSubmission, sectionOf } from "../../conformance/reference-submission.js";
import {
  fromHeader,
  highS,
  signAuthorization,
  testSettings,
  toHeader,
  v1Payment,
  v2Payment,
} from "../../payments/support.js";
import { CORPUS_DIR, corpusBytes } from "../../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "../fixtures/verify-gate.js";
import { fixtureTaskModule } from "../support/service.js";
import {
  CORPUS_REVOCATIONS,
  CORPUS_REVOKED_ISSUER,
  corpusText,
  DAMAGED_ISSUER,
  type Envelope,
  envelope,
  fixedBytes,
  INTERNAL_TOKEN,
  MIB,
  OTHER_TENANT,
  OWN_REVOCATIONS,
  OWN_REVOKED_SIGNER,
  sha256Hex,
  T0,
  TENANT,
  UNKNOWN_ISSUER,
} from "./fixtures.js";
import {
  type Answer,
  type Call,
  type RecordedService,
  type Recorder,
  send,
  startRecordedService,
} from "./recorder.js";

const JSON_TYPE = { "content-type": "application/json" };
const MCP_HEADERS = { ...JSON_TYPE, accept: "application/json, text/event-stream" };

const GOOD = "vectors/01_happy_minimal.json";
const FULL = "vectors/02_happy_full.json";
const TAMPERED = "vectors/03_tampered_body.json";
const ANCHORLESS = "vectors/10b_anchor_missing.json";
const ERASED = "vectors/09_erased_content.json";

const corpusCall = (file: string) => ({ body: corpusText(file), bodyLabel: `corpus ${file}` });

const HELLO_PROOF_B64 = corpusBytes("vectors/anchor/hello-world.txt.ots").toString("base64");
const HELLO_DIGEST = sha256Hex(corpusBytes("vectors/anchor/hello-world.txt"));
const HELLO_HEIGHT = "358391";
const HELLO_HEADER = (
  JSON.parse(corpusText("vectors/anchor/headers.json")) as { headers: Record<string, string> }
).headers[HELLO_HEIGHT] as string;

/** A body that splices raw JSON texts (corpus bundles byte for byte) into an object. */
function members(entries: Record<string, string>): string {
  const parts = Object.entries(entries).map(([name, json]) => `${JSON.stringify(name)}:${json}`);
  return `{${parts.join(",")}}`;
}

const quoted = (text: string) => JSON.stringify(text);

/** The bundle followed by spaces (insignificant whitespace) up to exactly `size` bytes. */
function padded(file: string, size: number): Buffer {
  const bytes = Buffer.from(corpusText(file), "utf8");
  return Buffer.concat([bytes, Buffer.alloc(size - bytes.length, " ")]);
}

// ---------------------------------------------------------------------------------------------

export async function recordAll(recorder: Recorder): Promise<void> {
  await mainService(recorder);
  await limitedService(recorder);
  await offeredService(recorder);
  await unreachableService(recorder);
  await paidService(recorder);
  await saturatedService(recorder);
  await evaluationService(recorder);
  await evaluationOffService(recorder);
}

async function withService(
  name: string,
  overrides: Parameters<typeof startRecordedService>[1],
  clock: () => number,
  run: (service: RecordedService) => Promise<void>,
): Promise<void> {
  const service = await startRecordedService(name, overrides, clock);
  try {
    await run(service);
  } finally {
    await service.close();
  }
}

// ---- main ----------------------------------------------------------------------------------

async function mainService(r: Recorder): Promise<void> {
  const clock = { now: T0 };
  await withService(
    "main",
    { corpusDir: CORPUS_DIR },
    () => clock.now,
    async (s) => {
      const keys = s.app.accessServices.keys;
      const main = (await keys.create({ name: "recorded-main" })).key;
      const other = (await keys.create({ name: "recorded-other" })).key;
      const revoked = (await keys.create({ name: "recorded-revoked" })).key;
      await keys.revoke(revoked);
      r.substitute(main, "<key main>");
      r.substitute(other, "<key other>");
      r.substitute(revoked, "<key revoked>");

      const documents = s.app.documentStore;
      await documents.replace("revocations", CORPUS_REVOKED_ISSUER, null, CORPUS_REVOCATIONS);
      await documents.replace("revocations", OWN_REVOKED_SIGNER.did, null, OWN_REVOCATIONS);
      await documents.replace("revocations", DAMAGED_ISSUER, null, Buffer.from("not json"));

      const call = (c: Call) => r.inject(s, c);
      const key = { "x-svc-key": main };
      const ctx: Main = { r, s, call, key, main, other, revoked, clock };
      await metadata(ctx);
      await verify(ctx);
      await verifyReceipt(ctx);
      await verifyAnchor(ctx);
      await anchors(ctx);
      await revocations(ctx);
      await paymentReceipts(ctx);
      await erc8004(ctx);
      await crystals(ctx);
      await conformance(ctx);
      await mcp(ctx);
      await overSocket(ctx);
      // Last, so that the caps it counts down change no earlier answer.
      await notarize(ctx);
    },
  );
}

interface Main {
  r: Recorder;
  s: RecordedService;
  call(c: Call): Promise<Answer>;
  key: Record<string, string>;
  main: string;
  other: string;
  revoked: string;
  clock: { now: number };
}

async function metadata({ call }: Main): Promise<void> {
  await call({ name: "GET /health", method: "GET", url: "/health" });
  await call({ name: "HEAD /health", method: "HEAD", url: "/health" });
  await call({ name: "GET /health/live", method: "GET", url: "/health/live" });
  await call({ name: "HEAD /health/live", method: "HEAD", url: "/health/live" });
  await call({ name: "GET /info (corpus deployed, payments off)", method: "GET", url: "/info" });
  await call({ name: "HEAD /info", method: "HEAD", url: "/info" });
  await call({ name: "GET /openapi.json", method: "GET", url: "/openapi.json" });
  await call({ name: "HEAD /openapi.json", method: "HEAD", url: "/openapi.json" });

  const cardUrl = "/.well-known/mcp/server-card.json";
  const card = await call({ name: "GET server card", method: "GET", url: cardUrl });
  const etag = card.headers.etag ?? "";
  await call({
    name: "GET server card, If-None-Match its ETag → 304",
    method: "GET",
    url: cardUrl,
    headers: { "if-none-match": etag },
  });
  await call({
    name: "GET server card, If-None-Match weak ETag in a list → 304",
    method: "GET",
    url: cardUrl,
    headers: { "if-none-match": `"other", W/${etag}` },
  });
  await call({
    name: "GET server card, If-None-Match another tag → 200",
    method: "GET",
    url: cardUrl,
    headers: { "if-none-match": '"other"' },
  });
  await call({ name: "HEAD server card", method: "HEAD", url: cardUrl });
  await call({
    name: "OPTIONS server card (CORS preflight)",
    method: "OPTIONS",
    url: cardUrl,
    headers: { origin: "https://client.example", "access-control-request-method": "GET" },
  });
  await call({ name: "GET /mcp/server-card (SEP-2127)", method: "GET", url: "/mcp/server-card" });
  await call({ name: "OPTIONS /mcp/server-card", method: "OPTIONS", url: "/mcp/server-card" });
  await call({ name: "HEAD /mcp/server-card", method: "HEAD", url: "/mcp/server-card" });

  await call({ name: "GET an unknown path → 404", method: "GET", url: "/no-such-route" });
  await call({
    name: "POST a mistyped path (/verifyy) → 404 naming /verify",
    method: "POST",
    url: "/verifyy",
    body: "{}",
  });
  await call({ name: "GET /verify (POST only) → 405, Allow: POST", method: "GET", url: "/verify" });
  await call({ name: "PUT /verify → 405", method: "PUT", url: "/verify", body: "{}" });
  await call({ name: "OPTIONS /verify (CORS off) → 405", method: "OPTIONS", url: "/verify" });
  await call({ name: "POST /revocations/{issuer} → 405", method: "POST", url: "/revocations/x" });
  await call({
    name: "GET a URL that cannot be percent-decoded → 400 bad_request",
    method: "GET",
    url: "/anchors/%E0%A4%A",
  });
}

async function verify({ call, key, main, revoked, clock }: Main): Promise<void> {
  const post = (name: string, url: string, body: Partial<Call>, headers = key) =>
    call({ name, method: "POST", url, headers: { ...JSON_TYPE, ...headers }, ...body });
  const good = corpusText(GOOD);

  await post("POST /verify: bare bundle → TRUSTED", "/verify", corpusCall(GOOD));
  await post("POST /verify: bare bundle 02_happy_full → TRUSTED", "/verify", corpusCall(FULL));
  await post("POST /verify: tampered bundle → UNTRUSTED", "/verify", corpusCall(TAMPERED));
  await post("POST /verify: erased content → INSUFFICIENT_EVIDENCE", "/verify", corpusCall(ERASED));
  await post("POST /verify: {bundle}", "/verify", {
    body: members({ bundle: good }),
    bodyLabel: `{bundle: corpus ${GOOD}}`,
  });
  const batch = `{"bundles":[${good},${corpusText(TAMPERED)},42]}`;
  await post("POST /verify: {bundles} with a non-object item", "/verify", {
    body: batch,
    bodyLabel: "{bundles: [01_happy_minimal, 03_tampered_body, 42]}",
  });
  await post("POST /verify: empty batch", "/verify", { body: '{"bundles":[]}' });
  await post("POST /verify?receipt=1: bare bundle with a signed receipt", "/verify?receipt=1", {
    ...corpusCall(GOOD),
  });
  await post("POST /verify?receipt=true: {bundle}", "/verify?receipt=true", {
    body: members({ bundle: good }),
    bodyLabel: `{bundle: corpus ${GOOD}}`,
  });
  await post("POST /verify?receipt=1: batch, one receipt per result", "/verify?receipt=1", {
    body: batch,
    bodyLabel: "{bundles: [01_happy_minimal, 03_tampered_body, 42]}",
  });
  await post(
    "POST /verify?require_anchor=1: anchor missing → PROVISIONAL",
    "/verify?require_anchor=1",
    corpusCall(ANCHORLESS),
  );
  await post(
    "POST /verify?require_anchor=0: the flag is off",
    "/verify?require_anchor=0",
    corpusCall(ANCHORLESS),
  );
  await post(
    "POST /verify?noreceipt=1&receipt=yes&cache=false: no flag enabled",
    "/verify?noreceipt=1&receipt=yes&cache=false",
    corpusCall(GOOD),
  );
  await post(
    "POST /verify?receipt=1&receipt=1: a repeated flag disables",
    "/verify?receipt=1&receipt=1",
    corpusCall(GOOD),
  );
  await post("POST /verify?cache=1: miss", "/verify?cache=1", corpusCall(FULL));
  clock.now += 7_000;
  await post("POST /verify?cache=1: hit 7 s later", "/verify?cache=1", corpusCall(FULL));
  await post(
    "POST /verify?cache=1&receipt=1: hit with a receipt",
    "/verify?cache=1&receipt=1",
    corpusCall(FULL),
  );
  await post(
    "POST /verify?cache=1&require_anchor=1: another cache key, a miss",
    "/verify?cache=1&require_anchor=1",
    corpusCall(FULL),
  );
  await post("POST /verify?cache=1: a batch is never cached", "/verify?cache=1", {
    body: `{"bundles":[${good}]}`,
    bodyLabel: `{bundles: [corpus ${GOOD}]}`,
  });
  const withFloat = `{"float_note": 1.5, ${good.slice(good.indexOf("{") + 1)}`;
  await post("POST /verify?receipt=1: a bundle holding a float", "/verify?receipt=1", {
    body: withFloat,
    bodyLabel: `corpus ${GOOD} with a float member`,
  });
  await post("POST /verify: Content-Type text/plain is read as JSON", "/verify", {
    ...corpusCall(GOOD),
    headers: { "content-type": "text/plain", ...key },
  });
  await call({
    name: "POST /verify: no Content-Type, key as Authorization: Bearer",
    method: "POST",
    url: "/verify",
    headers: { authorization: `Bearer ${main}` },
    ...corpusCall(GOOD),
  });
  await post("POST /verify: exactly 1 MiB (padded) is accepted", "/verify", {
    body: padded(GOOD, MIB),
    bodyLabel: `corpus ${GOOD} padded with spaces to 1 MiB`,
  });

  // Refusals.
  await post("POST /verify: truncated JSON → 400 invalid_json", "/verify", { body: "{" });
  await post("POST /verify: duplicate member → 400 invalid_json", "/verify", {
    body: '{"a":1,"a":2}',
  });
  await post("POST /verify: a UTF-8 BOM → 400 invalid_json", "/verify", {
    body: `\ufeff${good}`,
    bodyLabel: `BOM + corpus ${GOOD}`,
  });
  await post("POST /verify: trailing data → 400 invalid_json", "/verify", {
    body: `${good} {}`,
    bodyLabel: `corpus ${GOOD} + ' {}'`,
  });
  await post("POST /verify: bytes that are not UTF-8 → 400 invalid_json", "/verify", {
    body: Buffer.from([0x7b, 0xff, 0x7d]),
    bodyLabel: "{ 0xff }",
  });
  await post("POST /verify: empty body → 400 invalid_json", "/verify", { body: "" });
  await post("POST /verify: an array → 400 bad_shape", "/verify", { body: "[]" });
  await post("POST /verify: a number → 400 bad_shape", "/verify", { body: "42" });
  await post("POST /verify: {bundle: []} → 400 bad_shape", "/verify", { body: '{"bundle":[]}' });
  await post("POST /verify: 51 bundles → 400 batch_too_large", "/verify", {
    body: `{"bundles":[${Array(51).fill("{}").join(",")}]}`,
  });
  await post("POST /verify: 1 MiB + 1 byte → 413 body_too_large", "/verify", {
    body: padded(GOOD, MIB + 1),
    bodyLabel: `corpus ${GOOD} padded with spaces to 1 MiB + 1`,
  });
  await post("POST /verify: no credential → 401 missing_key", "/verify", corpusCall(GOOD), {});
  await post("POST /verify: unknown key → 401 invalid_key", "/verify", corpusCall(GOOD), {
    "x-svc-key": `svc_${"0".repeat(48)}`,
  });
  await post("POST /verify: malformed key → 401 invalid_key", "/verify", corpusCall(GOOD), {
    "x-svc-key": "not-a-key",
  });
  await post("POST /verify: revoked key → 401 invalid_key", "/verify", corpusCall(GOOD), {
    authorization: `Bearer ${revoked}`,
  });

  // A request in a slightly wrong form (issue 37): told what is wrong, and how to send it.
  await post(
    "POST /verify: key in Authorization without Bearer → 401 missing_key, detail",
    "/verify",
    corpusCall(GOOD),
    { authorization: main },
  );
  await post(
    "POST /verify?api_key=<key> → 401 missing_key, detail",
    `/verify?api_key=${main}`,
    corpusCall(GOOD),
    {},
  );
  await post("POST /verify: Content-Encoding gzip → 415 unsupported_content_encoding", "/verify", {
    // gzip of `{}` (mtime 0): the bytes are never read.
    body: Buffer.from("1f8b0800000000000203abae050043bfa6a302000000", "hex"),
    headers: { ...JSON_TYPE, ...key, "content-encoding": "gzip" },
  });
  const boundary = "------------------------recordedboundary";
  await post(
    "POST /verify: multipart/form-data (curl -F) → 415 unsupported_media_type",
    "/verify",
    {
      body:
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bundle.json"\r\n` +
        `Content-Type: application/json\r\n\r\n${good}\r\n--${boundary}--\r\n`,
      bodyLabel: `multipart/form-data: one part, corpus ${GOOD}`,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, ...key },
    },
  );
}

async function verifyReceipt({ call, key }: Main): Promise<void> {
  const post = (name: string, body: Partial<Call>, headers = key) =>
    call({
      name: `POST /verify-receipt: ${name}`,
      method: "POST",
      url: "/verify-receipt",
      headers: { ...JSON_TYPE, ...headers },
      ...body,
    });
  const receipt = corpusText("vectors/verification/01_valid.json");
  const bundle = corpusText("vectors/verification/bundle.json");
  const wrapped = (entries: Record<string, string>, label: string) => ({
    body: members(entries),
    bodyLabel: label,
  });
  const b64 = (text: string) => quoted(Buffer.from(text, "utf8").toString("base64"));
  const statements = dumpCompact(
    fromPlain(
      (JSON.parse(CORPUS_REVOCATIONS.toString("utf8")) as { statements: unknown }).statements,
    ),
  );

  await post("a bare valid receipt", corpusCall("vectors/verification/01_valid.json"));
  await post("a tampered signature", corpusCall("vectors/verification/02_tampered_signature.json"));
  await post("a bad kind", corpusCall("vectors/verification/05_bad_kind.json"));
  await post(
    "{receipt, bundle_bytes_b64} → digest_match true",
    wrapped({ receipt, bundle_bytes_b64: b64(bundle) }, "{receipt: 01_valid, bundle_bytes_b64}"),
  );
  await post(
    "{receipt, bundle: another bundle} → digest_match false",
    wrapped(
      { receipt, bundle: corpusText("vectors/verification/other_bundle.json") },
      "{receipt: 01_valid, bundle: other_bundle}",
    ),
  );
  await post(
    "{receipt, revocations} of a revoked issuer",
    wrapped(
      {
        receipt: corpusText("vectors/verification/12_revoked_issuer.json"),
        revocations: statements,
      },
      "{receipt: 12_revoked_issuer, revocations: its document's statements}",
    ),
  );
  await post(
    "{receipt, revocations: [junk]}",
    wrapped({ receipt, revocations: '["junk"]' }, "{receipt: 01_valid, revocations: [junk]}"),
  );
  await post("a body that is not an object → 200 not_an_object", { body: "[]" });
  await post("duplicate member → 400 invalid_json", { body: '{"receipt":{},"receipt":{}}' });
  await post(
    "an unknown wrapper member → 400 bad_shape",
    wrapped({ receipt, revocation: "[]" }, "{receipt: 01_valid, revocation: []}"),
  );
  await post(
    "both bundle and bundle_bytes_b64 → 400 ambiguous_bundle",
    wrapped(
      { receipt, bundle: "{}", bundle_bytes_b64: b64("{}") },
      "{receipt, bundle, bundle_bytes_b64}",
    ),
  );
  await post(
    "bundle_bytes_b64 not base64 → 400 bad_bundle_bytes",
    wrapped(
      { receipt, bundle_bytes_b64: quoted("not base64!") },
      "{receipt, bundle_bytes_b64: junk}",
    ),
  );
  await post(
    "bundle_bytes_b64 of a list → 400 bad_bundle_bytes",
    wrapped({ receipt, bundle_bytes_b64: b64("[]") }, "{receipt, bundle_bytes_b64: b64([])}"),
  );
  await post(
    "no credential → 401 missing_key",
    corpusCall("vectors/verification/01_valid.json"),
    {},
  );
}

async function verifyAnchor({ call, key }: Main): Promise<void> {
  const post = (name: string, body: string, headers = key) =>
    call({
      name: `POST /verify-anchor: ${name}`,
      method: "POST",
      url: "/verify-anchor",
      headers: { ...JSON_TYPE, ...headers },
      body,
    });
  const proof = HELLO_PROOF_B64;
  const hello = (extra: Record<string, unknown>) =>
    JSON.stringify({ proof, digest: `sha256:${HELLO_DIGEST}`, ...extra });

  await post(
    "hello-world with its header → verified",
    hello({ headers: { [HELLO_HEIGHT]: HELLO_HEADER } }),
  );
  await post(
    "hello-world with header + height, bare upper-case digest → verified",
    JSON.stringify({
      proof,
      digest: HELLO_DIGEST.toUpperCase(),
      header: HELLO_HEADER,
      height: 358391,
    }),
  );
  await post("hello-world without headers → unverified", hello({}));
  await post(
    "a header with another merkle root → header_mismatch",
    hello({ headers: { [HELLO_HEIGHT]: "11".repeat(80) } }),
  );
  await post(
    "a proof for another digest → digest_mismatch",
    JSON.stringify({ proof, digest: `sha256:${"ab".repeat(32)}` }),
  );
  const pendingDigest = fixedBytes("pending digest");
  await post(
    "a pending proof → anchor_pending",
    JSON.stringify({
      proof: pendingProof(pendingDigest).toString("base64"),
      digest: `sha256:${pendingDigest.toString("hex")}`,
    }),
  );
  await post(
    "a proof that is not OTS → 200 invalid bad_magic",
    JSON.stringify({
      proof: Buffer.from("garbage").toString("base64"),
      digest: `sha256:${HELLO_DIGEST}`,
    }),
  );
  await post(
    "a bad digest → 200 invalid bad_digest",
    JSON.stringify({ proof, digest: "sha256:zz" }),
  );
  await post(
    "proof not base64 → 400 invalid_proof_encoding",
    JSON.stringify({ proof: "!!!", digest: HELLO_DIGEST }),
  );
  await post(
    "header not hex → 400 invalid_header_encoding",
    hello({ headers: { [HELLO_HEIGHT]: "zz" } }),
  );
  await post("a negative height → 400 invalid_height", hello({ headers: { "-1": HELLO_HEADER } }));
  await post("a header without height → 400 bad_request", hello({ header: HELLO_HEADER }));
  await post(
    "both headers and header → 400 bad_request",
    hello({ headers: {}, header: HELLO_HEADER, height: 1 }),
  );
  await post("an array → 400 bad_request", "[]");
  await post("an unknown member → 400 bad_request", hello({ extra: 1 }));
  await post("truncated JSON → 400 invalid_json", "{");
  await post("no credential → 401 missing_key", hello({}), {});
}

async function anchors({ call, key }: Main): Promise<void> {
  const post = (name: string, body: string, headers = key) =>
    call({
      name: `POST /anchors: ${name}`,
      method: "POST",
      url: "/anchors",
      headers: { ...JSON_TYPE, ...headers },
      body,
    });
  const one = fixedBytes("anchor one");
  const two = fixedBytes("anchor two");
  const oneId = `sha256:${one.toString("hex")}`;
  const twoId = `sha256:${two.toString("hex")}`;
  const store = (digest: Buffer, proof: Buffer, note?: string) =>
    JSON.stringify({
      digest: `sha256:${digest.toString("hex")}`,
      proof: proof.toString("base64"),
      ...(note === undefined ? {} : { note }),
    });

  await post("a pending proof → created", store(one, pendingProof(one)));
  await post("the same proof again → unchanged", store(one, pendingProof(one)));
  await post("an upgraded proof → replaced", store(one, upgradedProof(one)));
  await post("the pending proof again → kept", store(one, pendingProof(one)));
  await post("with a note → created", store(two, pendingProof(two), "recorded note"));
  await post(
    "a proof for another digest → 400 proof_rejected",
    store(two, pendingProof(fixedBytes("anchor three"))),
  );
  await post(
    "a digest without sha256: → 400 invalid_digest",
    JSON.stringify({ digest: one.toString("hex"), proof: pendingProof(one).toString("base64") }),
  );
  await post(
    "a proof not base64 → 400 invalid_proof_encoding",
    JSON.stringify({ digest: oneId, proof: "%%%" }),
  );
  await post(
    "a note of 513 characters → 400 bad_request",
    store(two, pendingProof(two), "n".repeat(513)),
  );
  await post("an array → 400 bad_request", "[]");
  await post("truncated JSON → 400 invalid_json", "{");
  await post("no credential → 401 missing_key", store(one, pendingProof(one)), {});

  const get = (name: string, url: string, headers?: Record<string, string>) =>
    call({
      name: `GET /anchors/{digest}: ${name}`,
      method: "GET",
      url,
      ...(headers ? { headers } : {}),
    });
  const stored = await get("stored, upgraded", `/anchors/${oneId}`);
  const etag = stored.headers.etag ?? "";
  await get("with a note", `/anchors/${twoId}`);
  await get(
    "percent-encoded colon, upper-case hex",
    `/anchors/sha256%3A${one.toString("hex").toUpperCase()}`,
  );
  await get("If-None-Match its ETag → 304", `/anchors/${oneId}`, { "if-none-match": etag });
  await get("If-None-Match W/ETag → 304", `/anchors/${oneId}`, { "if-none-match": `W/${etag}` });
  await get("If-None-Match * → 304", `/anchors/${oneId}`, { "if-none-match": "*" });
  await get("If-None-Match another tag → 200", `/anchors/${oneId}`, { "if-none-match": '"x"' });
  await call({ name: "HEAD /anchors/{digest}", method: "HEAD", url: `/anchors/${oneId}` });
  await get("nothing stored → 404 anchor_not_found", `/anchors/sha256:${"0".repeat(64)}`);
  await get("a bad digest → 400 invalid_digest", "/anchors/sha256:xyz");
  await get("a sha512: digest → 400 invalid_digest", `/anchors/sha512:${"0".repeat(64)}`);
}

async function notarize({ call, key }: Main): Promise<void> {
  const post = (name: string, body: string, headers: Record<string, string> = key) =>
    call({
      name: `POST /notarize: ${name}`,
      method: "POST",
      url: "/notarize",
      headers: { ...JSON_TYPE, ...headers },
      body,
    });
  const digest = fixedBytes("notarized context").toString("hex");
  const signed = await post(
    "digests, claims and metadata → 200",
    JSON.stringify({
      context_digest: `SHA256:${digest.toUpperCase()}`,
      prompt_hash: digest,
      action: "summarize",
      model: "recorded-model",
      agent_id: "agent-1",
      metadata: { run: 7, ok: true, note: null },
    }),
  );
  const keyed = { ...key, "idempotency-key": "recorded-notarize-0001" };
  const once = JSON.stringify({ context_digest: digest });
  await post("with an Idempotency-Key → 200, the key echoed", once, keyed);
  await post("its retry → the first answer, not charged again", once, keyed);
  await post(
    "unknown members → 400 unsupported_fields with the list",
    JSON.stringify({ context_digest: digest, zeta: 1, alpha: 2 }),
  );
  await post("no digest → 400 missing_required_digest", JSON.stringify({ action: "x" }));
  await post(
    "a bad context_digest → 400 invalid_context_digest",
    JSON.stringify({ context_digest: "sha256:12" }),
  );
  await post(
    "a bad prompt_hash → 400 invalid_prompt_hash",
    JSON.stringify({ prompt_hash: `sha1:${digest}` }),
  );
  await post(
    "an action of 121 characters → 400 invalid_field",
    JSON.stringify({ context_digest: digest, action: "a".repeat(121) }),
  );
  await post(
    "metadata not an object → 400 invalid_metadata",
    JSON.stringify({ context_digest: digest, metadata: [] }),
  );
  await post(
    "a non-ASCII metadata key → 400 invalid_metadata_key",
    JSON.stringify({ context_digest: digest, metadata: { "k\u00e9": 1 } }),
  );
  await post(
    "a float metadata value → 400 invalid_metadata_value",
    `{"context_digest": "${digest}", "metadata": {"k": 1.0}}`,
  );
  await post(
    "a lone surrogate → 400 invalid_canonical_statement",
    `{"context_digest": "${digest}", "action": "\\ud800"}`,
  );
  await post("truncated JSON → 400 invalid_json", "{");
  await post("no credential → 401 missing_key", JSON.stringify({ context_digest: digest }), {});

  const get = (name: string, url: string, headers?: Record<string, string>) =>
    call({
      name: `GET /notarize/{digest}: ${name}`,
      method: "GET",
      url,
      ...(headers ? { headers } : {}),
    });
  const lookup = (JSON.parse(signed.text) as { lookup_url: string }).lookup_url;
  const stored = await get("the stored document", lookup);
  await get("If-None-Match its ETag → 304", lookup, { "if-none-match": stored.headers.etag ?? "" });
  await get("nothing stored → 404 notarization_not_found", `/notarize/${"0".repeat(64)}`);
  await get("a bad digest → 400 invalid_digest", "/notarize/sha256:xyz");
  await call({ name: "HEAD /notarize/{digest}", method: "HEAD", url: lookup });
  await call({ name: "GET /notarize", method: "GET", url: "/notarize" });
  await call({ name: "HEAD /notarize", method: "HEAD", url: "/notarize" });
}

async function revocations({ call }: Main): Promise<void> {
  const get = (name: string, url: string, headers?: Record<string, string>) =>
    call({
      name: `GET /revocations/{issuer}: ${name}`,
      method: "GET",
      url,
      ...(headers ? { headers } : {}),
    });
  const corpus = await get(
    "the corpus document, as stored",
    `/revocations/${CORPUS_REVOKED_ISSUER}`,
  );
  const etag = corpus.headers.etag ?? "";
  await get("percent-encoded colons", `/revocations/${encodeURIComponent(CORPUS_REVOKED_ISSUER)}`);
  await get("If-None-Match its ETag → 304", `/revocations/${CORPUS_REVOKED_ISSUER}`, {
    "if-none-match": etag,
  });
  await get("If-None-Match * → 304", `/revocations/${CORPUS_REVOKED_ISSUER}`, {
    "if-none-match": "*",
  });
  await call({
    name: "HEAD /revocations/{issuer}",
    method: "HEAD",
    url: `/revocations/${CORPUS_REVOKED_ISSUER}`,
  });
  await get("a document we signed", `/revocations/${OWN_REVOKED_SIGNER.did}`);
  await get("nothing stored → 404 no_document", `/revocations/${UNKNOWN_ISSUER}`);
  await get("not a did:key → 400 invalid_issuer", "/revocations/not-a-did");
  await get(
    "a damaged stored document → 500 stored_document_invalid",
    `/revocations/${DAMAGED_ISSUER}`,
  );
}

const SETTLED = {
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "10000",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  path: "/verify",
};

const TX_ONE = `0x${fixedBytes("tx one").toString("hex")}`;
const TX_TWO = `0x${fixedBytes("tx two").toString("hex")}`;
const TX_THREE = `0x${fixedBytes("tx three").toString("hex")}`;

async function paymentReceipts({ call }: Main): Promise<void> {
  const post = (
    name: string,
    body: string,
    headers: Record<string, string> = { "x-internal-token": INTERNAL_TOKEN },
    remoteAddress?: string,
  ) =>
    call({
      name: `POST /payment-receipts: ${name}`,
      method: "POST",
      url: "/payment-receipts",
      headers: { ...JSON_TYPE, ...headers },
      body,
      ...(remoteAddress === undefined ? {} : { remoteAddress }),
    });
  const settlement = (extra: Record<string, unknown>) => JSON.stringify({ ...SETTLED, ...extra });

  await post("a settlement → stored", settlement({ tx: TX_ONE, ua: "curl/8.5.0" }));
  await post("the same tx again → idempotent", settlement({ tx: TX_ONE, ua: "curl/8.5.0" }));
  await post(
    "an MCP settlement with rpc and tool",
    settlement({ tx: TX_TWO, path: "/mcp", rpc: "tools/call", tool: "verify_bundle", ua: null }),
  );
  await post(
    "an upper-case tx, no ua",
    settlement({ tx: TX_THREE.toUpperCase().replace("0X", "0x") }),
  );
  await post("no token → 401 internal_token_required", settlement({ tx: TX_ONE }), {});
  await post("a wrong token → 401 internal_token_required", settlement({ tx: TX_ONE }), {
    "x-internal-token": "x".repeat(48),
  });
  await post(
    "not loopback → 403 loopback_only",
    settlement({ tx: TX_ONE }),
    { "x-internal-token": INTERNAL_TOKEN },
    "198.51.100.23",
  );
  await post("truncated JSON → 400 invalid_json", "{");
  await post("a short tx → 400 invalid_transaction_hash", settlement({ tx: "0x12" }));
  await post(
    "no network → 400 bad_request",
    JSON.stringify({
      tx: TX_ONE,
      asset: SETTLED.asset,
      amount: "1",
      payTo: SETTLED.payTo,
      path: "/verify",
    }),
  );
  await post("an unknown member → 400 bad_request", settlement({ tx: TX_ONE, extra: 1 }));

  const get = (name: string, url: string, headers?: Record<string, string>) =>
    call({
      name: `GET /receipts/{tx}: ${name}`,
      method: "GET",
      url,
      ...(headers ? { headers } : {}),
    });
  const stored = await get("stored", `/receipts/${TX_ONE}`);
  await get("the MCP settlement", `/receipts/${TX_TWO}`);
  await get("upper-case hex", `/receipts/${TX_THREE.toUpperCase().replace("0X", "0x")}`);
  await get("If-None-Match its ETag → 304", `/receipts/${TX_ONE}`, {
    "if-none-match": stored.headers.etag ?? "",
  });
  await call({ name: "HEAD /receipts/{tx}", method: "HEAD", url: `/receipts/${TX_ONE}` });
  await get("nothing stored → 404 receipt_not_found", `/receipts/0x${"0".repeat(64)}`);
  await get("a short tx → 400 invalid_transaction_hash", "/receipts/0x12");
}

const REQUEST_ID = `0x${"5a".repeat(32)}`;

function taskId(file: string): string {
  return (JSON.parse(corpusText(file)) as { task_id: string }).task_id;
}

/** An ERC-8004 request whose bundle is the corpus file's exact bytes. */
function validation(file: string, fields: Record<string, unknown> = {}): Partial<Call> {
  const head = JSON.stringify({
    request_id: REQUEST_ID,
    task_hash: `sha256:${sha256Hex(taskId(file))}`,
    ...fields,
  }).slice(1, -1);
  return {
    body: `{${head},"bundle":${corpusText(file)}}`,
    bodyLabel: `{${head},"bundle":<corpus ${file}>}`,
  };
}

async function erc8004({ call, key }: Main): Promise<void> {
  const post = (name: string, body: Partial<Call>, headers = key) =>
    call({
      name: `POST /erc8004/validate: ${name}`,
      method: "POST",
      url: "/erc8004/validate",
      headers: { ...JSON_TYPE, ...headers },
      ...body,
    });
  const keccak = `0x${Buffer.from(keccak_256(taskId(GOOD))).toString("hex")}`;
  await post("TRUSTED, task_id bound by sha256 → ACCEPT", validation(GOOD));
  await post("TRUSTED, task_id bound by keccak-256", validation(GOOD, { task_hash: keccak }));
  await post("UNTRUSTED → REJECT", validation(TAMPERED));
  await post("INSUFFICIENT_EVIDENCE → NEEDS_EVIDENCE", validation(ERASED));
  await post(
    "lower-case registry and chain_id 84532",
    validation(GOOD, {
      registry_address: "0x8004cb1bf31daf7788923b405b754f57aceb4272",
      chain_id: 84532,
    }),
  );
  await post(
    "an unrelated task_hash → 422 task_hash_unbound",
    validation(GOOD, { task_hash: `0x${"ab".repeat(32)}` }),
  );
  const good = corpusText(GOOD);
  const withFloat = `{"float_note": 1.5, ${good.slice(good.indexOf("{") + 1)}`;
  await post("a bundle holding a float → 422 bundle_not_canonicalizable", {
    body: `{"request_id":"${REQUEST_ID}","task_hash":"sha256:${sha256Hex(taskId(GOOD))}","bundle":${withFloat}}`,
    bodyLabel: `{"request_id":…,"task_hash":…,"bundle":<corpus ${GOOD} with a float member>}`,
  });
  const variant = (name: string, fields: Record<string, unknown>) => {
    const all: Record<string, unknown> = {
      request_id: REQUEST_ID,
      task_hash: `sha256:${sha256Hex(taskId(GOOD))}`,
      bundle: "BUNDLE",
      ...fields,
    };
    for (const [field, value] of Object.entries(fields)) if (value === undefined) delete all[field];
    return post(name, {
      body: JSON.stringify(all).replace('"BUNDLE"', good),
      bodyLabel: JSON.stringify(all).replace('"BUNDLE"', `<corpus ${GOOD}>`),
    });
  };
  await post("truncated JSON → 400 invalid_json", { body: "{" });
  await post("an array → 400 bad_shape", { body: "[]" });
  await variant("an unknown member → 400 bad_shape", { chainId: 1 });
  await variant("no request_id → 400 missing_request_id", { request_id: undefined });
  await variant("a 31-byte request_id → 400 bad_request_id", {
    request_id: `0x${"5a".repeat(31)}`,
  });
  await variant("no task_hash → 400 missing_task_hash", { task_hash: undefined });
  await variant("a sha512: task_hash → 400 bad_task_hash", {
    task_hash: `sha512:${"ab".repeat(32)}`,
  });
  await variant("no bundle → 400 missing_bundle", { bundle: undefined });
  await variant("a bundle that is a list → 400 bad_bundle", { bundle: [] });
  await variant("a short registry_address → 400 bad_registry_address", {
    registry_address: `0x${"ab".repeat(19)}`,
  });
  await variant("a wrong EIP-55 checksum → 400 bad_registry_checksum", {
    registry_address: "0x8004cc8439f36fd5F9F049D9fF86523Df6dAAB58",
  });
  await variant("chain_id 0 → 400 bad_chain_id", { chain_id: 0 });
  await variant("chain_id as a string → 400 bad_chain_id", { chain_id: "8453" });
  await post("no credential → 401 missing_key", validation(GOOD), {});
}

async function crystals({ call, key, other }: Main): Promise<void> {
  const post = (name: string, body: Envelope | string, headers = key) =>
    call({
      name: `POST /crystals: ${name}`,
      method: "POST",
      url: "/crystals",
      headers: { ...JSON_TYPE, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const root = envelope({ label: "root" });
  const rootId = root.crystal_id as string;
  const child = envelope({
    label: "child",
    parent: rootId,
    cipher: "aes-256-gcm",
    createdAt: "2030-01-01T00:05:00.250Z",
    metadata: { label: "notes", turn: 3 },
  });
  const sibling = envelope({ label: "sibling", parent: rootId, createdAt: "2030-01-01T00:05:00Z" });

  await post("a root → 201 with Location", root);
  await post("the same envelope again → 200", root);
  const reordered = Object.fromEntries(Object.entries(root).reverse());
  await post("the same envelope, members reordered → 200", reordered);
  await post("a child (aes-256-gcm, metadata) → 201", child);
  await post("a sibling → 201", sibling);
  await post("the root id with another created_at → 409 crystal_conflict", {
    ...root,
    created_at: "2031-01-01T00:00:00Z",
  });
  await post(
    "a parent not in the tenant → 422 parent_not_found",
    envelope({ label: "orphan", parent: `sha256:${"0".repeat(64)}` }),
  );
  await post(
    "another key writing the tenant → 403 tenant_forbidden",
    envelope({ label: "intruder" }),
    { "x-svc-key": other },
  );
  await post(
    "another key, its own tenant → 201",
    envelope({ label: "other root", tenant: OTHER_TENANT }),
    { "x-svc-key": other },
  );
  await post("no credential → 401 missing_key", root, {});

  const valid = envelope({ label: "refused" });
  const without = (member: string) => {
    const copy = { ...valid };
    delete copy[member];
    return copy;
  };
  const cases: [string, Envelope | string][] = [
    ["duplicate members → 400 invalid_json", '{"spec":"svc-crystal/1.0","spec":"svc-crystal/1.0"}'],
    ["trailing data → 400 invalid_json", `${JSON.stringify(valid)} {}`],
    ["an array → 400 bad_envelope", "[]"],
    ["an unknown member → 400 unknown_member", { ...valid, owner: "me" }],
    ["no nonce → 400 missing_member", without("nonce")],
    ["no parent_crystal_id → 400 missing_member", without("parent_crystal_id")],
    ["another spec → 400 unsupported_spec", { ...valid, spec: "svc-crystal/2.0" }],
    [
      "an upper-case crystal_id → 400 invalid_crystal_id",
      { ...valid, crystal_id: (valid.crystal_id as string).toUpperCase() },
    ],
    [
      "a parent that is not an id → 400 invalid_parent_crystal_id",
      { ...valid, parent_crystal_id: "genesis" },
    ],
    [
      "its own parent → 400 invalid_parent_crystal_id",
      { ...valid, parent_crystal_id: valid.crystal_id },
    ],
    ["a tenant that is not a hash → 400 invalid_tenant_hash", { ...valid, tenant_hash: "acme" }],
    ["another cipher → 400 unsupported_cipher", { ...valid, cipher: "aes-128-gcm" }],
    [
      "an 11-byte nonce → 400 invalid_nonce",
      { ...valid, nonce: fixedBytes("short nonce", 11).toString("base64url") },
    ],
    [
      "a padded ciphertext → 400 invalid_ciphertext",
      { ...valid, ciphertext: `${valid.ciphertext as string}=` },
    ],
    [
      "a ciphertext shorter than the tag → 400 invalid_ciphertext",
      envelope({ label: "short", size: 15 }),
    ],
    ["size_bytes as a string → 400 invalid_size_bytes", { ...valid, size_bytes: "48" }],
    ["size_bytes off by one → 400 size_mismatch", { ...valid, size_bytes: 49 }],
    [
      "a crystal_id of other bytes → 400 crystal_id_mismatch",
      { ...valid, crystal_id: `sha256:${sha256Hex("other")}` },
    ],
    [
      "created_at on 30 February → 400 invalid_created_at",
      { ...valid, created_at: "2030-02-30T00:00:00Z" },
    ],
    ["metadata_public as a list → 400 invalid_metadata_public", { ...valid, metadata_public: [] }],
    [
      "metadata_public with a float → 400 invalid_metadata_public",
      JSON.stringify({ ...valid, metadata_public: { score: "FLOAT" } }).replace('"FLOAT"', "0.5"),
    ],
    [
      "metadata_public over 4 KiB → 400 metadata_too_large",
      { ...valid, metadata_public: { pad: "x".repeat(4096) } },
    ],
  ];
  for (const [name, body] of cases) await post(name, body);
  await call({
    name: "POST /crystals: a ciphertext of 2 MiB + 1 byte → 413 ciphertext_too_large",
    method: "POST",
    url: "/crystals",
    headers: { ...JSON_TYPE, ...key },
    body: JSON.stringify(envelope({ label: "large", size: 2 * MIB + 1 })),
    bodyLabel: "an envelope with 2 MiB + 1 byte of ciphertext",
  });
  await call({
    name: "POST /crystals: a body of 4 MiB + 1 byte → 413 body_too_large",
    method: "POST",
    url: "/crystals",
    headers: { ...JSON_TYPE, ...key },
    body: Buffer.alloc(4 * MIB + 1, " "),
    bodyLabel: "4 MiB + 1 spaces",
  });

  const get = (name: string, url: string, headers?: Record<string, string>) =>
    call({ name: `GET /crystals/${name}`, method: "GET", url, ...(headers ? { headers } : {}) });
  await get(
    "{crystal_id}?tenant= → the stored JCS envelope",
    `/crystals/${rootId}?tenant=${TENANT}`,
  );
  await get("{crystal_id} with X-Tenant-Hash", `/crystals/${child.crystal_id as string}`, {
    "x-tenant-hash": TENANT,
  });
  await get("{crystal_id}, If-None-Match the id → 304", `/crystals/${rootId}?tenant=${TENANT}`, {
    "if-none-match": `"${rootId}"`,
  });
  await call({
    name: "HEAD /crystals/{crystal_id}",
    method: "HEAD",
    url: `/crystals/${rootId}?tenant=${TENANT}`,
  });
  await get(
    "{crystal_id}, upper-case hex and %3A",
    `/crystals/sha256%3A${rootId.slice(7).toUpperCase()}?tenant=${TENANT.toUpperCase().replace("SHA256", "sha256")}`,
  );
  await get(
    "{crystal_id} of another tenant → 404 crystal_not_found",
    `/crystals/${rootId}?tenant=${OTHER_TENANT}`,
  );
  await get(
    "{crystal_id} stored nowhere → 404 crystal_not_found",
    `/crystals/sha256:${"0".repeat(64)}?tenant=${TENANT}`,
  );
  await get("{crystal_id} without a tenant → 400 missing_tenant", `/crystals/${rootId}`);
  await get(
    "{crystal_id}?tenant=acme → 400 invalid_tenant_hash",
    `/crystals/${rootId}?tenant=acme`,
  );
  await get(
    "{crystal_id}, header and query differ → 400 ambiguous_tenant",
    `/crystals/${rootId}?tenant=${TENANT}`,
    { "x-tenant-hash": OTHER_TENANT },
  );
  await get(
    "{crystal_id} not an id → 400 invalid_crystal_id",
    `/crystals/not-an-id?tenant=${TENANT}`,
  );
  await get("lineage?tenant= → the DAG", `/crystals/lineage?tenant=${TENANT}`);
  await get("lineage with X-Tenant-Hash (the other tenant)", "/crystals/lineage", {
    "x-tenant-hash": OTHER_TENANT,
  });
  await get(
    "lineage of an unknown tenant → empty",
    `/crystals/lineage?tenant=sha256:${"0".repeat(64)}`,
  );
  await get("lineage without a tenant → 400 missing_tenant", "/crystals/lineage");
  await call({
    name: "HEAD /crystals/lineage",
    method: "HEAD",
    url: `/crystals/lineage?tenant=${TENANT}`,
  });
}

async function conformance({ call, key }: Main): Promise<void> {
  const post = (name: string, body: Partial<Call>, headers = key) =>
    call({
      name: `POST /conformance: ${name}`,
      method: "POST",
      url: "/conformance",
      headers: { ...JSON_TYPE, ...headers },
      ...body,
    });
  await post("the reference's answers → CONFORMANT", {
    body: dumpCompact(referenceSubmission()),
    bodyLabel: "the reference implementation's recorded answers",
  });
  const flipped = referenceSubmission();
  const entry = sectionOf(flipped, "verification_receipts").get("12_revoked_issuer.json");
  if (isObject(entry)) entry.set("valid", true);
  await post("one flipped answer → PARTIAL", {
    body: dumpCompact(flipped),
    bodyLabel: "the reference's answers, 12_revoked_issuer valid flipped",
  });
  await post("no answers → NONCONFORMANT", {
    body: '{"implementation":{"name":"empty"},"results":{"hostile_inputs":{}}}',
  });
  await post("hostile_inputs left out → 400 missing_section", {
    body: '{"implementation":{"name":"x"},"results":{}}',
  });
  await post("no implementation → 400 bad_submission", { body: '{"results":{}}' });
  await post("an unknown member → 400 bad_submission", {
    body: '{"implementation":{"name":"x"},"results":{"hostile_inputs":{}},"extra":1}',
  });
  await post("truncated JSON → 400 invalid_json", { body: "{" });
  await post("no credential → 401 missing_key", { body: "{}" }, {});
}

function rpc(method: string, params?: unknown, id: number | string = 1): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method,
    ...(params === undefined ? {} : { params }),
  });
}

const INITIALIZE = (version: string) => ({
  protocolVersion: version,
  capabilities: {},
  clientInfo: { name: "recorder", version: "1" },
});

async function mcp({ call, key, main }: Main): Promise<void> {
  const post = (name: string, body: Partial<Call>, headers: Record<string, string> = {}) =>
    call({
      name: `POST /mcp: ${name}`,
      method: "POST",
      url: "/mcp",
      headers: { ...MCP_HEADERS, ...headers },
      ...body,
    });
  const tool = (name: string, args: string, id: number | string = 1) =>
    `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;
  const good = corpusText(GOOD);
  const V = { "mcp-protocol-version": "2025-06-18" };

  await post("initialize 2025-06-18", { body: rpc("initialize", INITIALIZE("2025-06-18")) });
  await post("initialize 2025-03-26", { body: rpc("initialize", INITIALIZE("2025-03-26")) });
  await post("initialize asking 2025-11-25 → 2025-06-18", {
    body: rpc("initialize", INITIALIZE("2025-11-25")),
  });
  await post("initialize without protocolVersion → -32602", {
    body: rpc("initialize", { capabilities: {} }),
  });
  await post(
    "notifications/initialized → 202",
    { body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' },
    V,
  );
  await post("a client's response → 202", { body: '{"jsonrpc":"2.0","id":7,"result":{}}' }, V);
  await post("ping", { body: rpc("ping") }, V);
  await post(
    "ping with an id beyond 2^53",
    { body: '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}' },
    V,
  );
  await post("tools/list", { body: rpc("tools/list") }, V);
  await post("tools/list with a cursor → -32602", { body: rpc("tools/list", { cursor: "x" }) }, V);
  await post(
    "tools/call verify_bundle",
    {
      body: tool("verify_bundle", `{"bundle":${good}}`),
      bodyLabel: `tools/call verify_bundle {bundle: corpus ${GOOD}}`,
    },
    { ...V, ...key },
  );
  await post(
    "tools/call verify_bundle require_anchor",
    {
      body: tool("verify_bundle", `{"bundle":${corpusText(ANCHORLESS)},"require_anchor":true}`),
      bodyLabel: `tools/call verify_bundle {bundle: corpus ${ANCHORLESS}, require_anchor: true}`,
    },
    { ...V, ...key },
  );
  await post(
    "tools/call verify_bundle with a receipt",
    {
      body: tool("verify_bundle", `{"bundle":${good},"receipt":true}`),
      bodyLabel: `tools/call verify_bundle {bundle: corpus ${GOOD}, receipt: true}`,
    },
    { ...V, authorization: `Bearer ${main}` },
  );
  await post(
    "tools/call verify_anchor",
    {
      body: tool(
        "verify_anchor",
        JSON.stringify({
          proof: HELLO_PROOF_B64,
          digest: HELLO_DIGEST,
          headers: { [HELLO_HEIGHT]: HELLO_HEADER },
        }),
      ),
    },
    { ...V, ...key },
  );
  await post(
    "tools/call verify_anchor with a bad proof → isError",
    { body: tool("verify_anchor", '{"proof":"!!!","digest":"00"}') },
    { ...V, ...key },
  );
  await post(
    "tools/call get_revocations",
    { body: tool("get_revocations", JSON.stringify({ issuer: CORPUS_REVOKED_ISSUER })) },
    { ...V, ...key },
  );
  await post(
    "tools/call get_revocations, nothing stored → isError",
    { body: tool("get_revocations", JSON.stringify({ issuer: UNKNOWN_ISSUER })) },
    { ...V, ...key },
  );
  await post(
    "tools/call get_revocations, not a did → isError",
    { body: tool("get_revocations", '{"issuer":"nope"}') },
    { ...V, ...key },
  );
  await post(
    "tools/call an unknown tool → -32602",
    { body: tool("no_such_tool", "{}") },
    { ...V, ...key },
  );
  await post(
    "tools/call verify_bundle without bundle → -32602",
    { body: tool("verify_bundle", "{}") },
    { ...V, ...key },
  );
  await post("an unknown method → -32601", { body: rpc("resources/list") }, V);
  await post("truncated JSON → 400 -32700", { body: "{" }, V);
  await post("duplicate member → 400 -32700", { body: '{"jsonrpc":"2.0","jsonrpc":"2.0"}' }, V);
  await post("jsonrpc 1.0 → 400 -32600", { body: '{"jsonrpc":"1.0","id":1,"method":"ping"}' }, V);
  await post("a batch (2025-03-26): requests answered in order", {
    body: `[${rpc("ping", undefined, 1)},{"jsonrpc":"2.0","method":"notifications/initialized"},${rpc("tools/list", undefined, 2)}]`,
  });
  await post(
    "a batch with a bad member and a tools/call",
    {
      body: `[${rpc("ping", undefined, "a")},{"jsonrpc":"2.0","id":"b"},${tool("get_revocations", JSON.stringify({ issuer: OWN_REVOKED_SIGNER.did }), "c")}]`,
    },
    key,
  );
  await post("a batch of notifications → 202", {
    body: '[{"jsonrpc":"2.0","method":"notifications/initialized"}]',
  });
  await post("an empty batch → 400 -32600", { body: "[]" });
  await post("a batch under 2025-06-18 → 400 -32600", { body: `[${rpc("ping")}]` }, V);
  await post(
    "an unsupported MCP-Protocol-Version → 400 -32000",
    { body: rpc("ping") },
    { "mcp-protocol-version": "1999-01-01" },
  );
  await post(
    "tools/call without a credential → 401 missing_key",
    { body: tool("verify_bundle", "{}") },
    V,
  );
  await post(
    "tools/call with an unknown key → 401 invalid_key",
    { body: tool("verify_bundle", "{}") },
    { ...V, "x-svc-key": `svc_${"0".repeat(48)}` },
  );
  await post(
    "Accept: text/html → 406 not_acceptable",
    { body: rpc("ping") },
    { ...V, accept: "text/html" },
  );
  await post(
    "Accept: application/json;q=0 → 406",
    { body: rpc("ping") },
    { ...V, accept: "application/json;q=0, */*" },
  );
  await post("no Accept is served", { body: rpc("ping") }, { ...V, accept: "" });
  await post(
    "Content-Type: text/plain → 415 unsupported_media_type",
    { body: rpc("ping") },
    { ...V, "content-type": "text/plain" },
  );
  await call({
    name: "POST /mcp: no Content-Type is read as JSON",
    method: "POST",
    url: "/mcp",
    headers: { accept: "application/json", ...V },
    body: rpc("ping"),
  });
  await post(
    "a foreign Origin → 403 origin_not_allowed",
    { body: rpc("ping") },
    { ...V, origin: "https://evil.example" },
  );
  await post(
    "Origin: null → 403 origin_not_allowed",
    { body: rpc("ping") },
    { ...V, origin: "null" },
  );
  await post(
    "an Origin naming the Host it sends (DNS rebinding) → 403 origin_not_allowed",
    { body: rpc("ping") },
    { ...V, origin: "http://evil.example", host: "evil.example" },
  );
  await post(
    "1 MiB + 1 byte → 413 body_too_large",
    { body: Buffer.alloc(MIB + 1, " "), bodyLabel: "1 MiB + 1 spaces" },
    V,
  );
  await call({
    name: "GET /mcp → 405",
    method: "GET",
    url: "/mcp",
    headers: { accept: "text/event-stream" },
  });
  await call({ name: "DELETE /mcp → 405", method: "DELETE", url: "/mcp" });
  await call({ name: "HEAD /mcp → 405", method: "HEAD", url: "/mcp" });
}

async function overSocket({ r, s, key }: Main): Promise<void> {
  await s.app.listen({ port: 0, host: "127.0.0.1" });
  const address = s.app.server.address();
  if (address === null || typeof address !== "object") throw new Error("no socket address");
  const port = address.port;
  // A fixed Host: the server card names the origin it was reached at.
  const host = { host: "receiptd.test:8080" };
  const socket = (c: Call) => r.socket(s, port, c);
  await socket({ name: "socket: GET /health", method: "GET", url: "/health", headers: host });
  await socket({
    name: "socket: GET server card (its origin from Host)",
    method: "GET",
    url: "/.well-known/mcp/server-card.json",
    headers: host,
  });
  await socket({
    name: "socket: POST /verify",
    method: "POST",
    url: "/verify",
    headers: { ...host, ...JSON_TYPE, ...key },
    ...corpusCall(GOOD),
  });
  await socket({
    name: "socket: POST /verify 1 MiB + 1 byte → 413",
    method: "POST",
    url: "/verify",
    headers: { ...host, ...JSON_TYPE, ...key },
    body: padded(GOOD, MIB + 1),
    bodyLabel: `corpus ${GOOD} padded with spaces to 1 MiB + 1`,
  });
  await socket({
    name: "socket: POST /payment-receipts from loopback → idempotent",
    method: "POST",
    url: "/payment-receipts",
    headers: { ...host, ...JSON_TYPE, "x-internal-token": INTERNAL_TOKEN },
    body: JSON.stringify({ ...SETTLED, tx: TX_ONE, ua: "curl/8.5.0" }),
  });
  await r.rawSocket(
    s,
    port,
    "raw socket: a Content-Length that is not a number → 400",
    "POST /verify HTTP/1.1\r\nHost: receiptd.test\r\nContent-Length: abc\r\n\r\n",
  );
}

// ---- limited: no corpus, small caps -----------------------------------------------------------

async function limitedService(r: Recorder): Promise<void> {
  await withService(
    "limited",
    { limits: { anonymousDailyCap: 3 } },
    () => T0,
    async (s) => {
      const key = (await s.app.accessServices.keys.create({ name: "recorded-capped", dailyCap: 2 }))
        .key;
      r.substitute(key, "<key capped>");
      const call = (c: Call) => r.inject(s, c);
      const headers = { ...JSON_TYPE, "x-svc-key": key };
      await call({
        name: "limited: GET /info (no corpus; anonymous 1 of 3)",
        method: "GET",
        url: "/info",
      });
      await call({
        name: "limited: POST /conformance → 503 corpus_not_deployed (key 1 of 2)",
        method: "POST",
        url: "/conformance",
        headers,
        body: '{"implementation":{"name":"x"},"results":{}}',
      });
      await call({
        name: "limited: POST /verify (key 2 of 2)",
        method: "POST",
        url: "/verify",
        headers,
        ...corpusCall(GOOD),
      });
      await call({
        name: "limited: POST /verify over the key's cap → 429 daily_cap_reached",
        method: "POST",
        url: "/verify",
        headers,
        ...corpusCall(GOOD),
      });
      await call({ name: "limited: GET /health is not counted", method: "GET", url: "/health" });
      await call({
        name: "limited: GET /revocations/x (anonymous 2 of 3)",
        method: "GET",
        url: "/revocations/x",
      });
      await call({
        name: "limited: POST /mcp tools/list (anonymous 3 of 3)",
        method: "POST",
        url: "/mcp",
        headers: MCP_HEADERS,
        body: rpc("tools/list"),
      });
      await call({
        name: "limited: GET /info over the anonymous cap → 429",
        method: "GET",
        url: "/info",
      });
      await call({
        name: "limited: POST /mcp initialize over the anonymous cap → 429",
        method: "POST",
        url: "/mcp",
        headers: MCP_HEADERS,
        body: rpc("initialize", INITIALIZE("2025-06-18")),
      });
      await call({
        name: "limited: an unknown path is not counted → 404",
        method: "GET",
        url: "/nope",
      });
    },
  );
}

// ---- x402 ------------------------------------------------------------------------------------

const PAYER = privateKeyToAccount(`0x${"11".repeat(32)}`);
const PUBLIC_BASE_URL = "https://receiptd.example";

type Version = 1 | 2;

/** The `index`-th offer of a 402 as a client reads it: v1 from the body, v2 from the header. */
function offerOf(challenge: Answer, version: Version, index = 0) {
  if (challenge.status !== 402)
    throw new Error(`expected a 402, got ${challenge.status}: ${challenge.text}`);
  const source =
    version === 1
      ? JSON.parse(challenge.text)
      : fromHeader(challenge.headers["payment-required"] ?? "");
  const wire = fromPlain((source as { accepts: unknown[] }).accepts[index]);
  if (!isObject(wire)) throw new Error("an offer is not an object");
  return wire;
}

/** A payment header for an offer, signed by the fixed payer with a nonce named by `label`. */
async function payment(
  challenge: Answer,
  version: Version,
  label: string,
  options: { index?: number; value?: bigint; signature?: (signed: Hex) => Hex } = {},
): Promise<Record<string, string>> {
  const wire = offerOf(challenge, version, options.index);
  const requirement = requirementFromWire(wire, version);
  const now = BigInt(Math.floor(T0 / 1000));
  const signed = await signAuthorization(PAYER, requirement, {
    nonce: `0x${fixedBytes(`nonce ${label}`).toString("hex")}`,
    validAfter: now - 600n,
    validBefore: now + BigInt(requirement.maxTimeoutSeconds),
    ...(options.value === undefined ? {} : { value: options.value }),
  });
  if (options.signature) signed.signature = options.signature(signed.signature);
  if (version === 1)
    return { "x-payment": toHeader(v1Payment(String(wire.get("network")), signed)) };
  return { "payment-signature": toHeader(v2Payment(wire, signed)) };
}

function paymentsOn(facilitatorUrl: string | null) {
  return { payments: { settings: testSettings(), facilitatorUrl, publicBaseUrl: PUBLIC_BASE_URL } };
}

async function offeredService(r: Recorder): Promise<void> {
  await withService(
    "offered",
    paymentsOn(null),
    () => T0,
    async (s) => {
      const call = (c: Call) => r.inject(s, c);
      const post = (
        name: string,
        url: string,
        headers: Record<string, string>,
        body: Partial<Call>,
      ) =>
        call({
          name: `offered: ${name}`,
          method: "POST",
          url,
          headers: { ...JSON_TYPE, ...headers },
          ...body,
        });
      await call({ name: "offered: GET /info (payments on)", method: "GET", url: "/info" });
      const challenge = await post(
        "POST /verify without credential → 402 (call offer)",
        "/verify",
        {},
        corpusCall(GOOD),
      );
      await post(
        "POST /crystals without credential → 402 (lease and day offers)",
        "/crystals",
        {},
        { body: JSON.stringify(envelope({ label: "root" })) },
      );
      await post(
        "POST /erc8004/validate without credential → 402",
        "/erc8004/validate",
        {},
        validation(GOOD),
      );
      await post("POST /conformance without credential → 402", "/conformance", {}, { body: "{}" });
      await post(
        "POST /verify-anchor without credential → 402",
        "/verify-anchor",
        {},
        { body: "{}" },
      );
      await post(
        "POST /mcp tools/call without credential → 402",
        "/mcp",
        { accept: "application/json" },
        { body: rpc("tools/call", { name: "verify_bundle", arguments: {} }) },
      );
      await post(
        "POST /mcp tools/list stays open",
        "/mcp",
        { accept: "application/json" },
        { body: rpc("tools/list") },
      );
      await post(
        "X-PAYMENT not base64 → 402 invalid_payment_encoding",
        "/verify",
        { "x-payment": "%%%" },
        corpusCall(GOOD),
      );
      await post(
        "X-PAYMENT of base64 junk → 402",
        "/verify",
        { "x-payment": Buffer.from("{").toString("base64") },
        corpusCall(GOOD),
      );
      await post(
        "X-PAYMENT and PAYMENT-SIGNATURE → 402 multiple_payment_headers",
        "/verify",
        { "x-payment": "e30=", "payment-signature": "e30=" },
        corpusCall(GOOD),
      );
      await post(
        "x402Version 3 → 402 invalid_x402_version",
        "/verify",
        { "x-payment": toHeader(fromPlain({ x402Version: 3 })) },
        corpusCall(GOOD),
      );
      await post(
        "a payment for too little → 402",
        "/verify",
        await payment(challenge, 2, "too little", { value: 1n }),
        corpusCall(GOOD),
      );
      await post(
        "a high-s signature → 402",
        "/verify",
        await payment(challenge, 2, "high s", { signature: highS }),
        corpusCall(GOOD),
      );
      await post(
        "a valid payment, no facilitator → 503 payments_unavailable",
        "/verify",
        await payment(challenge, 1, "no facilitator"),
        corpusCall(GOOD),
      );
      await post(
        "a malformed pass → 402 pass_malformed",
        "/crystals",
        { "x-pass-token": "pass_junk" },
        { body: JSON.stringify(envelope({ label: "root" })) },
      );
    },
  );
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address !== "object") throw new Error("no address");
  return `http://127.0.0.1:${address.port}/`;
}

async function unreachableService(r: Recorder): Promise<void> {
  await withService(
    "unreachable",
    paymentsOn(await closedPortUrl()),
    () => T0,
    async (s) => {
      const challenge = await r.inject(s, {
        name: "unreachable: POST /verify → 402",
        method: "POST",
        url: "/verify",
        headers: JSON_TYPE,
        ...corpusCall(GOOD),
      });
      await r.inject(s, {
        name: "unreachable: a valid payment, facilitator down → 502 facilitator_unreachable",
        method: "POST",
        url: "/verify",
        headers: { ...JSON_TYPE, ...(await payment(challenge, 2, "unreachable")) },
        ...corpusCall(GOOD),
      });
    },
  );
}

/** The settlement transaction a paid answer names in its receipt header. */
function settledTx(answer: Answer): string {
  const header = answer.headers["payment-response"] ?? answer.headers["x-payment-response"];
  if (header === undefined) throw new Error(`not settled: ${answer.status} ${answer.text}`);
  return (fromHeader(header) as { transaction: string }).transaction;
}

/** Settlement receipts are stored by the settlements queue after the answer: wait for one. */
async function settlementStored(s: RecordedService, tx: string): Promise<void> {
  for (let attempt = 0; attempt < 1500; attempt += 1) {
    if ((await s.app.documentStore.get("settlements", tx.toLowerCase())) !== null) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the settlement receipt of ${tx} was never stored`);
}

async function paidService(r: Recorder): Promise<void> {
  const clock = { now: T0 };
  const peer = await startFacilitatorPeer({ clock: () => clock.now });
  try {
    await withService(
      "paid",
      paymentsOn(peer.url),
      () => clock.now,
      async (s) => {
        const call = (c: Call) => r.inject(s, c);
        const post = (
          name: string,
          url: string,
          headers: Record<string, string>,
          body: Partial<Call>,
        ) =>
          call({
            name: `paid: ${name}`,
            method: "POST",
            url,
            headers: { ...JSON_TYPE, ...headers },
            ...body,
          });
        const get = (name: string, url: string) =>
          call({ name: `paid: ${name}`, method: "GET", url });

        const challenge = await post("POST /verify → 402", "/verify", {}, corpusCall(GOOD));
        const v1 = await post(
          "POST /verify paid, x402 v1 → 200 + X-PAYMENT-RESPONSE",
          "/verify",
          await payment(challenge, 1, "verify v1"),
          corpusCall(GOOD),
        );
        const v2Headers = await payment(challenge, 2, "verify v2");
        const v2 = await post(
          "POST /verify paid, x402 v2 → 200 + PAYMENT-RESPONSE",
          "/verify",
          v2Headers,
          corpusCall(GOOD),
        );
        await post(
          "the same payment again → 402 nonce_already_used",
          "/verify",
          v2Headers,
          corpusCall(GOOD),
        );
        const refusedHeaders = await payment(challenge, 2, "refused request");
        await post("a paid request that fails → 400, not settled", "/verify", refusedHeaders, {
          body: "{",
        });
        await post(
          "the same authorization then pays → 200",
          "/verify",
          refusedHeaders,
          corpusCall(GOOD),
        );
        await settlementStored(s, settledTx(v1));
        await settlementStored(s, settledTx(v2));
        await get("GET /receipts/{tx} of the v1 payment", `/receipts/${settledTx(v1)}`);
        await get("GET /receipts/{tx} of the v2 payment", `/receipts/${settledTx(v2)}`);

        const root = envelope({ label: "paid root" });
        const crystalChallenge = await post(
          "POST /crystals → 402",
          "/crystals",
          {},
          { body: JSON.stringify(root) },
        );
        const leased = await post(
          "POST /crystals paid with a lease → 201 + X-Pass-Token",
          "/crystals",
          await payment(crystalChallenge, 2, "lease", { index: 0 }),
          { body: JSON.stringify(root) },
        );
        const pass = leased.headers["x-pass-token"] ?? "";
        await post(
          "POST /crystals with the lease in X-Pass-Token → 201",
          "/crystals",
          { "x-pass-token": pass },
          {
            body: JSON.stringify(
              envelope({ label: "paid child", parent: root.crystal_id as string }),
            ),
          },
        );
        await post(
          "POST /crystals with the lease as Bearer → 200",
          "/crystals",
          { authorization: `Bearer ${pass}` },
          { body: JSON.stringify(root) },
        );
        await post(
          "POST /erc8004/validate with the crystals lease → 402 pass_scope_mismatch",
          "/erc8004/validate",
          { "x-pass-token": pass },
          validation(GOOD),
        );
        await post(
          "a pass with a bad signature → 402 pass_signature_invalid",
          "/crystals",
          { "x-pass-token": `${pass.slice(0, -2)}AA` },
          { body: JSON.stringify(root) },
        );
        const validateChallenge = await post(
          "POST /erc8004/validate → 402",
          "/erc8004/validate",
          {},
          validation(GOOD),
        );
        await post(
          "POST /erc8004/validate paid with a day pass → 200 + X-Pass-Token",
          "/erc8004/validate",
          await payment(validateChallenge, 1, "day pass", { index: 1 }),
          validation(GOOD),
        );

        // A found document is work done, so the call is settled; a tool error is not (issue 37).
        await s.app.documentStore.replace(
          "revocations",
          CORPUS_REVOKED_ISSUER,
          null,
          CORPUS_REVOCATIONS,
        );
        const toolCall = rpc("tools/call", {
          name: "get_revocations",
          arguments: { issuer: CORPUS_REVOKED_ISSUER },
        });
        const failingToolCall = rpc("tools/call", {
          name: "get_revocations",
          arguments: { issuer: UNKNOWN_ISSUER },
        });
        const mcpHeaders = { accept: "application/json" };
        const mcpChallenge = await post("POST /mcp tools/call → 402", "/mcp", mcpHeaders, {
          body: toolCall,
        });
        const paidTool = await post(
          "POST /mcp tools/call paid → 200",
          "/mcp",
          { ...mcpHeaders, ...(await payment(mcpChallenge, 2, "mcp")) },
          { body: toolCall },
        );
        await post(
          "POST /mcp tools/list with a payment → 200, not settled",
          "/mcp",
          { ...mcpHeaders, ...(await payment(mcpChallenge, 2, "mcp discovery")) },
          { body: rpc("tools/list") },
        );
        await post(
          "POST /mcp tools/call paid, a tool error only → 200, not settled",
          "/mcp",
          { ...mcpHeaders, ...(await payment(mcpChallenge, 2, "mcp tool error")) },
          { body: failingToolCall },
        );
        await settlementStored(s, settledTx(paidTool));
        await get("GET /receipts/{tx} of the MCP payment", `/receipts/${settledTx(paidTool)}`);

        clock.now += 301_000;
        await post(
          "the lease 301 s later → 402 pass_expired",
          "/crystals",
          { "x-pass-token": pass },
          { body: JSON.stringify(root) },
        );
      },
    );
  } finally {
    await peer.close();
  }
}

// ---- saturated: the CPU pool's queue is full -------------------------------------------------

async function saturatedService(r: Recorder): Promise<void> {
  const gate = new BroadcastChannel(GATE_CHANNEL);
  let gateOpen = false;
  // A task that starts after the gate opened asks while it is open: let it through too.
  gate.onmessage = (event) => {
    if (gateOpen && (event as MessageEvent).data === TASK_WAITING) gate.postMessage(GATE_OPEN);
  };
  const pool = {
    threads: 1,
    maxQueue: 1,
    taskModules: { verify: fixtureTaskModule("gated-verify-worker") },
  };
  try {
    await withService(
      "saturated",
      { cpuPool: pool },
      () => T0,
      async (s) => {
        // A key per request, recorded under one name: every answer is the same whichever
        // request happens to be the one refused.
        const calls: Call[] = [];
        for (const n of [1, 2, 3]) {
          const key = (await s.app.accessServices.keys.create({ name: `recorded-load-${n}` })).key;
          r.substitute(key, "<key load>");
          calls.push({
            name: "",
            method: "POST",
            url: "/verify",
            headers: { ...JSON_TYPE, "x-svc-key": key },
            ...corpusCall(GOOD),
          });
        }
        const pending = calls.map((call) => send(s, call));
        // One request holds the thread and one the queue slot; neither finishes while the gate
        // is shut, so the first answer is the refused one.
        await Promise.race(pending);
        gateOpen = true;
        gate.postMessage(GATE_OPEN);
        const answers = await Promise.all(pending);
        const sent = calls.map((call, index) => [call, answers[index] as Answer] as [Call, Answer]);
        sent.sort(([, a], [, b]) => b.status - a.status);
        const names = [
          "saturated: POST /verify finding the queue full → 503 overloaded",
          "saturated: POST /verify admitted (thread)",
          "saturated: POST /verify admitted (queue slot)",
        ];
        await r.recordSent(
          s,
          sent.map(([call, answer], index) => [{ ...call, name: names[index] as string }, answer]),
        );
      },
    );
  } finally {
    gate.close();
  }
}

// ---- evaluation keys ------------------------------------------------------------------------

const EVALUATION_TERMS = {
  keyDailyCap: 2,
  ttlHours: 1,
  perAddressDaily: 1,
  perDay: 2,
  powBits: 8,
  perNetworkDaily: 100,
  powRampBits: 0,
};

async function evaluationService(r: Recorder): Promise<void> {
  const clock = { now: T0 };
  await withService(
    "evaluation",
    { evaluationKeys: EVALUATION_TERMS },
    () => clock.now,
    async (s) => {
      const call = (c: Call) => r.inject(s, c);
      let solved = 0;
      /** A challenge and a nonce solving it (recorded under placeholders). */
      const challenge = async (name: string) => {
        const answer = await call({ name, method: "GET", url: "/keys/evaluation/challenge" });
        const { challenge: token, difficulty } = JSON.parse(answer.text);
        solved += 1;
        const nonce = solveProofOfWork(nodeSha256, token, difficulty, {
          prefix: `recorded-nonce-${solved}-`,
        });
        if (nonce === null) throw new Error("no nonce found");
        r.substitute(nonce, "<nonce that solves it>");
        return { token: token as string, nonce };
      };
      const issue = (name: string, body: string, remoteAddress?: string) =>
        call({
          name,
          method: "POST",
          url: "/keys/evaluation",
          headers: JSON_TYPE,
          body,
          ...(remoteAddress === undefined ? {} : { remoteAddress }),
        });
      const solution = (c: { token: string; nonce: string }) =>
        JSON.stringify({ challenge: c.token, nonce: c.nonce });

      const first = await challenge("evaluation: GET /keys/evaluation/challenge");
      await call({
        name: "evaluation: HEAD /keys/evaluation/challenge",
        method: "HEAD",
        url: "/keys/evaluation/challenge",
      });
      await issue(
        "evaluation: POST /keys/evaluation, not JSON → 400 invalid_json",
        '{"challenge":',
      );
      await issue(
        "evaluation: POST /keys/evaluation without a nonce → 400 bad_shape",
        JSON.stringify({ challenge: first.token }),
      );
      const mac = first.token.slice(first.token.lastIndexOf(".") + 1);
      const altered = first.token.replace(mac, "A".repeat(43));
      r.substitute(altered, "<that challenge with its MAC replaced by 43 A>");
      await issue(
        "evaluation: POST /keys/evaluation, challenge altered → 400 invalid_challenge",
        JSON.stringify({ challenge: altered, nonce: first.nonce }),
      );
      let weak = 0;
      const weakNonce = () => `recorded-weak-${weak}`;
      while (
        solveProofOfWork(nodeSha256, first.token, EVALUATION_TERMS.powBits, {
          prefix: "recorded-weak-",
          start: weak,
          maxAttempts: 1,
        }) !== null
      ) {
        weak += 1;
      }
      r.substitute(weakNonce(), "<nonce short of the difficulty>");
      await issue(
        "evaluation: POST /keys/evaluation, work short of the difficulty → 400 insufficient_proof_of_work",
        JSON.stringify({ challenge: first.token, nonce: weakNonce() }),
      );
      const issued = await issue(
        "evaluation: POST /keys/evaluation → 201 an evaluation key",
        solution(first),
      );
      const key = { "x-svc-key": JSON.parse(issued.text).key as string };
      await issue(
        "evaluation: POST /keys/evaluation, the challenge again → 409 challenge_already_used",
        solution(first),
      );
      for (const [index, expected] of ["1 of 2", "2 of 2"].entries()) {
        await call({
          name: `evaluation: POST /verify with the evaluation key (${expected}${index === 0 ? ", TRUSTED" : ""})`,
          method: "POST",
          url: "/verify",
          headers: key,
          ...corpusCall(GOOD),
        });
      }
      await call({
        name: "evaluation: POST /verify over the evaluation key's cap → 429 daily_cap_reached",
        method: "POST",
        url: "/verify",
        headers: key,
        ...corpusCall(GOOD),
      });
      const second = await challenge("evaluation: GET /keys/evaluation/challenge (second)");
      await issue(
        "evaluation: POST /keys/evaluation, same address again → 429 evaluation_limit_reached",
        solution(second),
      );
      // The refusal spent that challenge: each attempt needs a new one.
      const third = await challenge("evaluation: GET /keys/evaluation/challenge (third)");
      await issue(
        "evaluation: POST /keys/evaluation from another address → 201",
        solution(third),
        "192.0.2.2",
      );
      const fourth = await challenge("evaluation: GET /keys/evaluation/challenge (fourth)");
      await issue(
        "evaluation: POST /keys/evaluation past the day's keys → 429 evaluation_keys_exhausted",
        solution(fourth),
        "192.0.2.3",
      );
      clock.now = T0 + 301_000;
      await issue(
        "evaluation: POST /keys/evaluation, 301 s later → 400 challenge_expired",
        solution(fourth),
        "192.0.2.3",
      );
      await issue(
        "evaluation: POST /keys/evaluation, body over 4 KiB → 413 body_too_large",
        JSON.stringify({ challenge: "x".repeat(4096), nonce: "1" }),
      );
      clock.now = T0 + 3_600_000;
      await call({
        name: "evaluation: POST /verify with the evaluation key an hour later → 401 key_expired",
        method: "POST",
        url: "/verify",
        headers: key,
        ...corpusCall(GOOD),
      });
      await call({
        name: "evaluation: GET /info (the terms in force)",
        method: "GET",
        url: "/info",
      });
    },
  );
}

async function evaluationOffService(r: Recorder): Promise<void> {
  await withService(
    "evaluation-off",
    { evaluationKeys: null },
    () => T0,
    async (s) => {
      const call = (c: Call) => r.inject(s, c);
      await call({
        name: "evaluation-off: GET /keys/evaluation/challenge → 404 evaluation_keys_disabled",
        method: "GET",
        url: "/keys/evaluation/challenge",
      });
      await call({
        name: "evaluation-off: POST /keys/evaluation → 404 evaluation_keys_disabled",
        method: "POST",
        url: "/keys/evaluation",
        headers: JSON_TYPE,
        body: '{"challenge":"x","nonce":"1"}',
      });
    },
  );
}
