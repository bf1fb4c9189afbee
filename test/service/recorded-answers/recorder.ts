/**
 * Sends the recorded-answers requests and writes each exchange down in the recording's form:
 * what was asked (method, URL, the headers the request set, the body or a digest of it) and
 * what was answered (status, every response header but `Date`, the body). Also the
 * normalisers, the only places where an answer is not recorded as it was sent, and the
 * comparison that names the first differing field.
 *
 * Normalisers (each replaces a value only after checking it, and only where named):
 * 1. `X-Request-Id`: a fresh UUID per request by design → `<uuid>` once it is one.
 * 2. `verified_at` of a verification receipt (`kind` continuity-receipt-verification) and the
 *    receipt's `sig.value`: stamped by the worker thread's wall clock, which a test cannot
 *    set; the time is checked to fall within the run and the signature is verified first.
 * 3. `cached_at` of a `?cache=1` payload's `cache` member: the same worker wall-clock
 *    `verified_at` (checked to fall within the run).
 * 4. `issued_at` and `sig.value` of a conformance report: worker wall clock; signature
 *    verified first.
 * 5. `message.timestamp`, `digest` and `signature` of an ERC-8004 attestation: the worker's
 *    wall clock, and the EIP-712 hash and secp256k1 signature over it; the digest is
 *    recomputed and the signer recovered (= the validator address) first.
 * 6. `stored_at` of a stored anchor document (`GET /anchors/{digest}`): the anchors queue
 *    stamps it with the wall clock; and so the document's ETag, which is checked to be the
 *    SHA-256 of the served bytes and then replaced by its placeholder wherever it appears
 *    (later ETag headers, If-None-Match of later requests).
 * 7. MCP `content[].text` holding a payload that normalisers 2–5 changed: the text is the
 *    payload's compact JSON, so it is parsed, normalised and written again (only after
 *    checking that writing the parsed text again gives the text back).
 * 8. `challenge` of `GET /keys/evaluation/challenge`: a random salt under an HMAC; its form is
 *    checked, its MAC verified under the key derived from the fixed internal token, and its
 *    difficulty and expiry compared with the answer's; then it is replaced wherever it
 *    appears (the bodies of later `POST /keys/evaluation`).
 * 9. `key`, `id` and `name` of an issued evaluation key (`POST /keys/evaluation`, 201): random
 *    by design; the key is checked to be `svc_` + 48 hex, the id to be its SHA-256's first 12
 *    digits and the name `evaluation-<id>`; the key is then replaced wherever it appears
 *    (later requests presenting it).
 * Not recorded at all: the `Date` header of socket answers (wall clock). Request headers
 * that carry runtime-made API keys are recorded under a name (`<key main>`): the keys are
 * inputs, never echoed in an answer (the recording is checked for that).
 */
import { createHash, createHmac } from "node:crypto";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import type { FastifyInstance } from "fastify";
import { hashTypedData, recoverAddress } from "viem";
import { CHALLENGE_KEY_INFO } from "../../../src/access/evaluation/challenges.js";
import { parseChallenge } from "../../../src/portable/proof-of-work.js";
import type { ConfigOverrides } from "../../../src/service/config.js";
import { InternalToken } from "../../../src/service/internal-token.js";
import { verifyEd25519 } from "../../../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../../../src/verifier/json/canonical.js";
import { dumpCompact, dumpJson } from "../../../src/verifier/json/dump.js";
import { parseJson } from "../../../src/verifier/json/parse.js";
import {
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
  PyFloat,
  toPlain,
} from "../../../src/verifier/json/value.js";
import { startTestService, temporaryDataDir } from "../support/service.js";
import { INTERNAL_TOKEN, VALIDATOR_ADDRESS, writeFixedIdentity } from "./fixtures.js";

export type Method = "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "OPTIONS";

export interface Call {
  /** Unique, readable: what is asked and what it shows. */
  name: string;
  method: Method;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Recorded instead of a long body, with its size and SHA-256. */
  bodyLabel?: string;
  /** The peer address `app.inject()` pretends to be (default 127.0.0.1). */
  remoteAddress?: string;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  text: string;
}

export interface RecordedService {
  name: string;
  app: FastifyInstance;
  dataDir: string;
  close(): Promise<void>;
}

/** Route templates by request id, filled by an onResponse hook (for the coverage check). */
const routeOf = new WeakMap<FastifyInstance, Map<string, string>>();

/**
 * A service over a fresh DATA_DIR that already holds the fixed identity files, with no key
 * of its own (the scenarios make theirs) and the given clock.
 */
export async function startRecordedService(
  name: string,
  overrides: ConfigOverrides,
  clock: () => number,
): Promise<RecordedService> {
  const dataDir = await temporaryDataDir();
  await writeFixedIdentity(dataDir);
  const service = await startTestService({ ...overrides, dataDir }, { anonymous: true, clock });
  const routes = new Map<string, string>();
  routeOf.set(service.app, routes);
  service.app.addHook("onResponse", async (request) => {
    const template = request.routeOptions.url;
    if (template !== undefined) routes.set(request.id, `${request.method} ${template}`);
  });
  return { name, app: service.app, dataDir, close: () => service.close() };
}

// ---- placeholders ----

export const PLACEHOLDERS = {
  uuid: "<uuid>",
  wallClock: "<wall clock, checked: YYYY-MM-DDTHH:MM:SSZ within the run>",
  wallClockSeconds: "<wall clock, checked: unix seconds within the run>",
  ed25519: "<ed25519 signature, verified>",
  eip712Digest: "<EIP-712 digest, recomputed>",
  secp256k1: "<secp256k1 signature, recovers the validator address>",
  anchorEtag: '"<sha256 of the stored anchor document, checked>"',
  evaluationChallenge: "<evaluation challenge, MAC verified>",
  evaluationKey: "<evaluation key, checked: svc_ + 48 hex>",
  evaluationKeyId: "<its id: the first 12 hex digits of its SHA-256, checked>",
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const WHOLE_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

class NormaliserError extends Error {}

function fail(what: string): never {
  throw new NormaliserError(what);
}

/** What a normaliser needs to know about the exchange it works on. */
interface Context {
  route: string | undefined;
  notBefore: number;
  /** Values replaced in this exchange that must be replaced wherever they appear later. */
  learn(value: string, placeholder: string): void;
  /** Checks that finish asynchronously (signer recovery). */
  pending: Promise<void>[];
}

function checkSeconds(seconds: number, what: string, context: Context): void {
  const now = Math.ceil(Date.now() / 1000);
  if (!(seconds >= context.notBefore && seconds <= now)) {
    fail(`${what} (${seconds}) is not a time within this run`);
  }
}

function wallClock(object: JsonObject, member: string, context: Context): void {
  const value = object.get(member);
  if (typeof value !== "string" || !WHOLE_SECONDS.test(value)) {
    fail(`${member} is not an RFC 3339 UTC time in whole seconds: ${String(value)}`);
  }
  checkSeconds(Date.parse(value) / 1000, member, context);
  object.set(member, PLACEHOLDERS.wallClock);
}

/** Verifies `sig` (Ed25519 by `issuer` over JCS without `sig`), then stamps its placeholder. */
function verifiedEd25519(document: JsonObject, what: string): void {
  const issuer = document.get("issuer");
  const sig = document.get("sig");
  if (typeof issuer !== "string" || !isObject(sig)) fail(`${what} has no issuer or sig`);
  const value = sig.get("value");
  if (typeof value !== "string" || !verifyEd25519(issuer, canonicalBytes(document, "sig"), value)) {
    fail(`${what}: the signature does not verify`);
  }
  sig.set("value", PLACEHOLDERS.ed25519);
}

function verificationReceipt(receipt: JsonObject, context: Context): void {
  verifiedEd25519(receipt, "verification receipt");
  wallClock(receipt, "verified_at", context);
}

function conformanceReport(report: JsonObject, context: Context): void {
  verifiedEd25519(report, "conformance report");
  wallClock(report, "issued_at", context);
}

function attestation(envelope: JsonObject, context: Context): void {
  const plain = toPlain(envelope) as {
    domain: Record<string, unknown>;
    types: Record<string, { name: string; type: string }[]>;
    primaryType: string;
    message: { timestamp: number };
    digest: `0x${string}`;
    signature: `0x${string}`;
    signer: string;
  };
  const typed = {
    domain: plain.domain,
    types: plain.types,
    primaryType: plain.primaryType,
    message: plain.message,
  } as Parameters<typeof hashTypedData>[0];
  if (hashTypedData(typed) !== plain.digest) fail("attestation digest is not its EIP-712 hash");
  const message = envelope.get("message");
  if (!isObject(message) || typeof message.get("timestamp") !== "number") {
    fail("attestation message has no timestamp");
  }
  checkSeconds(plain.message.timestamp, "attestation timestamp", context);
  message.set("timestamp", PLACEHOLDERS.wallClockSeconds);
  envelope.set("digest", PLACEHOLDERS.eip712Digest);
  envelope.set("signature", PLACEHOLDERS.secp256k1);
  context.pending.push(
    recoverAddress({ hash: plain.digest, signature: plain.signature }).then((address) => {
      if (address !== plain.signer || address !== VALIDATOR_ADDRESS) {
        fail(`attestation recovers ${address}, not the validator ${VALIDATOR_ADDRESS}`);
      }
    }),
  );
}

/** Applies normalisers 2–5 and 7 to every object of `value`; true when anything changed. */
function normaliseValue(value: JsonValue, context: Context): boolean {
  if (isArray(value)) {
    let changed = false;
    for (const item of value) changed = normaliseValue(item, context) || changed;
    return changed;
  }
  if (!isObject(value)) return false;
  let changed = true;
  const kind = value.get("kind");
  if (kind === "continuity-receipt-verification" && value.has("sig")) {
    verificationReceipt(value, context);
  } else if (kind === "continuity-receipt-conformance" && value.has("sig")) {
    conformanceReport(value, context);
  } else if (value.get("primaryType") === "ValidationResponse" && value.has("signature")) {
    attestation(value, context);
  } else if (value.has("hit") && value.has("cached_at")) {
    wallClock(value, "cached_at", context);
  } else {
    changed = false;
  }
  for (const [name, member] of value) {
    changed = normaliseValue(member, context) || changed;
    if (name === "content" && isArray(member)) changed = mcpTexts(member, context) || changed;
  }
  return changed;
}

/** Normaliser 7: an MCP tool result's text is its payload's compact JSON. */
function mcpTexts(content: JsonValue[], context: Context): boolean {
  let changed = false;
  for (const item of content) {
    if (!isObject(item) || item.get("type") !== "text") continue;
    const text = item.get("text");
    if (typeof text !== "string" || !text.startsWith("{")) continue;
    let payload: JsonValue;
    try {
      payload = parseJson(text);
    } catch {
      continue;
    }
    if (dumpCompact(payload) !== text) continue;
    if (normaliseValue(payload, context)) {
      item.set("text", dumpCompact(payload));
      changed = true;
    }
  }
  return changed;
}

/** Normaliser 6, on the body of `GET /anchors/{digest}`. */
function storedAnchor(
  document: JsonValue,
  raw: Buffer,
  etag: string | undefined,
  context: Context,
) {
  if (!isObject(document) || !document.has("stored_at")) return;
  wallClock(document, "stored_at", context);
  const expected = `"${createHash("sha256").update(raw).digest("hex")}"`;
  if (etag !== expected) fail(`the anchor document's ETag ${etag} is not the SHA-256 of its bytes`);
  context.learn(etag, PLACEHOLDERS.anchorEtag);
}

/** Normaliser 8, on the body of `GET /keys/evaluation/challenge`. */
function evaluationChallenge(body: JsonValue, context: Context): void {
  if (!isObject(body)) return;
  const token = body.get("challenge");
  const fields = typeof token === "string" ? parseChallenge(token) : null;
  if (typeof token !== "string" || fields === null) fail(`not a challenge token: ${String(token)}`);
  const key = new InternalToken(INTERNAL_TOKEN).deriveKey(CHALLENGE_KEY_INFO);
  const mac = createHmac("sha256", key).update(fields.signed, "ascii").digest("base64url");
  if (mac !== fields.mac) fail("the challenge's MAC does not verify under the fixed token");
  const expiresAt = new Date(fields.expiresAt * 1000).toISOString().replace(".000Z", "Z");
  if (body.get("difficulty") !== fields.difficulty || body.get("expires_at") !== expiresAt) {
    fail("the challenge's difficulty or expiry differs from the answer's");
  }
  body.set("challenge", PLACEHOLDERS.evaluationChallenge);
  context.learn(token, PLACEHOLDERS.evaluationChallenge);
}

/** Normaliser 9, on a `201` of `POST /keys/evaluation`. */
function issuedEvaluationKey(body: JsonValue, context: Context): void {
  if (!isObject(body)) return;
  const key = body.get("key");
  if (typeof key !== "string" || !/^svc_[0-9a-f]{48}$/.test(key)) fail("not an API key");
  const id = createHash("sha256").update(key).digest("hex").slice(0, 12);
  if (body.get("id") !== id || body.get("name") !== `evaluation-${id}`) {
    fail("the key's id or name does not follow from its hash");
  }
  body.set("key", PLACEHOLDERS.evaluationKey);
  body.set("id", PLACEHOLDERS.evaluationKeyId);
  body.set("name", `evaluation-${PLACEHOLDERS.evaluationKeyId}`);
  context.learn(key, PLACEHOLDERS.evaluationKey);
}

// ---- the recorder ----

/** Response headers never recorded: `Date` is the wall clock of the socket's server. */
const UNRECORDED_HEADERS = new Set(["date"]);

/** Request bodies up to this size are recorded as text; longer ones as size and digest. */
const MAX_VERBATIM_BODY = 2048;

function headerText(value: string | string[] | number | undefined): string {
  if (Array.isArray(value)) return value.join(", ");
  return String(value);
}

/** One request through `app.inject()`, not recorded (`Recorder.recordSent` records it). */
export async function send(service: RecordedService, call: Call): Promise<Answer> {
  const response = await service.app.inject({
    method: call.method,
    url: call.url,
    headers: call.headers ?? {},
    ...(call.body === undefined ? {} : { payload: call.body }),
    ...(call.remoteAddress === undefined ? {} : { remoteAddress: call.remoteAddress }),
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = headerText(value);
  }
  const body = response.rawPayload;
  return { status: response.statusCode, headers, body, text: body.toString("utf8") };
}

export class Recorder {
  readonly exchanges: JsonObject[] = [];
  /** `METHOD /template` of every route that answered a recorded request. */
  readonly coverage = new Set<string>();
  readonly #names = new Set<string>();
  /** Runtime values and the names they are recorded under (API keys, normalised ETags). */
  readonly #substitutions = new Map<string, string>();
  readonly #notBefore = Math.floor(Date.now() / 1000);

  /** A value made at runtime that is recorded under `placeholder` wherever it appears. */
  substitute(value: string, placeholder: string): void {
    this.#substitutions.set(value, placeholder);
  }

  #substituted(text: string): string {
    let out = text;
    for (const [value, placeholder] of this.#substitutions)
      out = out.split(value).join(placeholder);
    return out;
  }

  async inject(service: RecordedService, call: Call): Promise<Answer> {
    const answer = await send(service, call);
    await this.#record(service, "inject", call, answer);
    return answer;
  }

  /**
   * Records answers that were sent concurrently (see `send`), in an order the caller chose
   * and under names given once the answers are known.
   */
  async recordSent(service: RecordedService, sent: [Call, Answer][]): Promise<void> {
    for (const [call, answer] of sent) await this.#record(service, "inject", call, answer);
  }

  /** The same over a real socket to `port`, with node:http (`agent: false`: one connection). */
  async socket(service: RecordedService, port: number, call: Call): Promise<Answer> {
    const answer = await new Promise<Answer>((resolve, reject) => {
      const outgoing = httpRequest(
        {
          host: "127.0.0.1",
          port,
          method: call.method,
          path: call.url,
          headers: call.headers,
          agent: false,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => {
            const body = Buffer.concat(chunks);
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(response.headers)) {
              if (value !== undefined) headers[name] = headerText(value);
            }
            resolve({
              status: response.statusCode ?? 0,
              headers,
              body,
              text: body.toString("utf8"),
            });
          });
          response.on("error", reject);
        },
      );
      // The server may answer (413) and close before the whole body is written.
      outgoing.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code !== "EPIPE" && error.code !== "ECONNRESET") reject(error);
      });
      outgoing.end(call.body);
    });
    await this.#record(service, "socket", call, answer);
    return answer;
  }

  /**
   * Bytes written straight to a socket, for what no HTTP client sends (a malformed request
   * line); the answer is recorded as the raw text the server wrote.
   */
  async rawSocket(service: RecordedService, port: number, name: string, bytes: string) {
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.end(bytes));
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      socket.on("error", reject);
    });
    this.#unique(name);
    this.exchanges.push(
      new Map<string, JsonValue>([
        ["name", name],
        ["service", service.name],
        ["transport", "raw socket"],
        ["request", bytes],
        ["response", text.replace(/^Date: .*\r\n/im, "")],
      ]),
    );
    return text;
  }

  #unique(name: string): void {
    if (this.#names.has(name)) throw new Error(`two exchanges are named '${name}'`);
    this.#names.add(name);
  }

  async #record(
    service: RecordedService,
    transport: "inject" | "socket",
    call: Call,
    answer: Answer,
  ): Promise<void> {
    this.#unique(call.name);
    const route = routeOf.get(service.app)?.get(answer.headers["x-request-id"] ?? "");
    if (route !== undefined) this.coverage.add(route);
    const context: Context = {
      route,
      notBefore: this.#notBefore,
      pending: [],
      learn: (value, placeholder) => this.substitute(value, placeholder),
    };
    let response: JsonObject;
    try {
      response = this.#response(answer, context);
      await Promise.all(context.pending);
    } catch (error) {
      if (error instanceof NormaliserError) {
        throw new Error(`${call.name}: ${error.message}`, { cause: error });
      }
      throw error;
    }
    this.exchanges.push(
      new Map<string, JsonValue>([
        ["name", call.name],
        ["service", service.name],
        ["transport", transport],
        ["request", this.#request(call)],
        ["response", response],
      ]),
    );
  }

  #request(call: Call): JsonObject {
    const recorded: JsonObject = new Map<string, JsonValue>([
      ["method", call.method],
      ["url", this.#substituted(call.url)],
    ]);
    const headers = Object.entries(call.headers ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    if (headers.length > 0) {
      recorded.set(
        "headers",
        new Map(headers.map(([name, value]) => [name.toLowerCase(), this.#substituted(value)])),
      );
    }
    if (call.body !== undefined) recorded.set("body", this.#requestBody(call));
    if (call.remoteAddress !== undefined) recorded.set("remote_address", call.remoteAddress);
    return recorded;
  }

  #requestBody(call: Call): string {
    const bytes = Buffer.from(call.body ?? "");
    const text = bytes.toString("utf8");
    const verbatim = Buffer.from(text, "utf8").equals(bytes) && bytes.length <= MAX_VERBATIM_BODY;
    if (verbatim && call.bodyLabel === undefined) return this.#substituted(text);
    const digest = createHash("sha256").update(bytes).digest("hex");
    const label = call.bodyLabel === undefined ? "" : `${call.bodyLabel}: `;
    return `<${label}${bytes.length} bytes, sha256 ${digest}>`;
  }

  #response(answer: Answer, context: Context): JsonObject {
    const recorded: JsonObject = new Map<string, JsonValue>([["status", answer.status]]);
    let body: JsonValue | undefined;
    let bodyKind: "json" | "text" | "base64" | undefined;
    if (answer.body.length > 0) {
      const parsed = compactJson(answer.body);
      if (parsed !== undefined) {
        if (context.route === "GET /anchors/:digest") {
          storedAnchor(parsed, answer.body, answer.headers.etag, context);
        }
        if (context.route === "GET /keys/evaluation/challenge" && answer.status === 200) {
          evaluationChallenge(parsed, context);
        }
        if (context.route === "POST /keys/evaluation" && answer.status === 201) {
          issuedEvaluationKey(parsed, context);
        }
        normaliseValue(parsed, context);
        body = parsed;
        bodyKind = "json";
      } else if (Buffer.from(answer.text, "utf8").equals(answer.body)) {
        body = answer.text;
        bodyKind = "text";
      } else {
        body = answer.body.toString("base64");
        bodyKind = "base64";
      }
    }
    const headers: JsonObject = new Map();
    for (const name of Object.keys(answer.headers).sort()) {
      if (UNRECORDED_HEADERS.has(name)) continue;
      let value = answer.headers[name] as string;
      if (name === "x-request-id") {
        if (!UUID.test(value)) fail(`X-Request-Id is not a UUID: ${value}`);
        value = PLACEHOLDERS.uuid;
      }
      headers.set(name, this.#substituted(value));
    }
    recorded.set("headers", headers);
    if (body !== undefined && bodyKind !== undefined) recorded.set(bodyKind, body);
    return recorded;
  }
}

/**
 * The body as parsed JSON when it is exactly the compact serialisation of what it parses to
 * (so recording the value records the bytes); undefined otherwise (recorded as text).
 */
function compactJson(body: Buffer): JsonValue | undefined {
  let value: JsonValue;
  try {
    value = parseJson(body);
  } catch {
    return undefined;
  }
  return dumpCompact(value) === body.toString("utf8") ? value : undefined;
}

// ---- the recording file and the comparison ----

/** Pretty-printed, members in the order they were recorded (the answers' own order). */
export function formatRecording(header: JsonObject, exchanges: JsonObject[]): string {
  const document = new Map<string, JsonValue>([...header, ["exchanges", exchanges]]);
  return `${dumpJson(document, { indent: 2, ensureAscii: false })}\n`;
}

export function parseRecording(text: string): JsonObject[] {
  const document = parseJson(text);
  if (!isObject(document)) throw new Error("the recording is not a JSON object");
  const exchanges = document.get("exchanges");
  if (!isArray(exchanges) || !exchanges.every(isObject)) {
    throw new Error("the recording has no list of exchanges");
  }
  return exchanges as JsonObject[];
}

function shown(value: JsonValue | undefined): string {
  if (value === undefined) return "(absent)";
  const text = dumpCompact(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

function same(a: JsonValue, b: JsonValue): boolean {
  if (a instanceof PyFloat || b instanceof PyFloat) {
    return a instanceof PyFloat && b instanceof PyFloat && Object.is(a.value, b.value);
  }
  return a === b;
}

/** The first place where `answered` differs from `recorded`, as `path: recorded …, answered …`. */
export function firstDifference(
  recorded: JsonValue | undefined,
  answered: JsonValue | undefined,
  path: string,
): string | null {
  const differs = () => `${path}: recorded ${shown(recorded)}, answered ${shown(answered)}`;
  if (recorded === undefined || answered === undefined) {
    return recorded === answered ? null : differs();
  }
  if (isObject(recorded) && isObject(answered)) {
    for (const [name, value] of recorded) {
      const difference = firstDifference(value, answered.get(name), `${path}.${name}`);
      if (difference !== null) return difference;
    }
    for (const name of answered.keys()) {
      if (!recorded.has(name))
        return firstDifference(undefined, answered.get(name), `${path}.${name}`);
    }
    const recordedOrder = [...recorded.keys()].join(",");
    const answeredOrder = [...answered.keys()].join(",");
    if (recordedOrder !== answeredOrder) {
      return `${path}: members in another order: recorded [${recordedOrder}], answered [${answeredOrder}]`;
    }
    return null;
  }
  if (isArray(recorded) && isArray(answered)) {
    const length = Math.max(recorded.length, answered.length);
    for (let index = 0; index < length; index += 1) {
      const difference = firstDifference(recorded[index], answered[index], `${path}[${index}]`);
      if (difference !== null) return difference;
    }
    return null;
  }
  if (typeof recorded === "string" && typeof answered === "string" && recorded !== answered) {
    return `${path}: ${stringDifference(recorded, answered)}`;
  }
  return same(recorded, answered) ? null : differs();
}

/** Where two long strings part, with a little context, so a diff in a text body is legible. */
function stringDifference(recorded: string, answered: string): string {
  if (recorded.length <= 120 && answered.length <= 120) {
    return `recorded ${JSON.stringify(recorded)}, answered ${JSON.stringify(answered)}`;
  }
  let at = 0;
  while (at < recorded.length && recorded[at] === answered[at]) at += 1;
  const around = (text: string) => JSON.stringify(text.slice(Math.max(0, at - 40), at + 60));
  return `differs from character ${at}: recorded …${around(recorded)}…, answered …${around(answered)}…`;
}

/** One line per exchange that differs: its number, its name and its first differing field. */
export function differences(recorded: JsonObject[], answered: JsonObject[]): string[] {
  const lines: string[] = [];
  const length = Math.max(recorded.length, answered.length);
  for (let index = 0; index < length; index += 1) {
    const was = recorded[index];
    const now = answered[index];
    const name = String(was?.get("name") ?? now?.get("name"));
    if (was === undefined || now === undefined || was.get("name") !== now.get("name")) {
      lines.push(
        `#${index}: the requests changed: recorded '${String(was?.get("name") ?? "(none)")}', ` +
          `sent '${String(now?.get("name") ?? "(none)")}'`,
      );
      break;
    }
    const difference = firstDifference(was, now, "");
    if (difference !== null) lines.push(`#${index} ${name}: ${difference.slice(1)}`);
  }
  return lines;
}
