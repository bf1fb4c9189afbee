/**
 * `receiptd/client`: a typed client of the receiptd HTTP API (docs/client.md) on one undici
 * keep-alive pool. Every method retries what the server asks to be retried (429 and 503 after
 * `Retry-After`/`RateLimit`, a 409 for an `Idempotency-Key` still running) and what a lost
 * connection cut off, with capped jittered backoff. A lost connection is retried for every
 * method because every request it sends is safe to repeat: verification is a pure
 * computation, and writes (`notarize`, `anchors.store`) and paid calls carry an
 * `Idempotency-Key` that stays the same across the retries of one call, so a retry is never
 * charged or stored twice.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Pool } from "undici";
import type { Verdict, VerifyResult } from "../verifier/bundle/result.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import { fromPlain } from "../verifier/json/value.js";
import {
  type ReceiptCheck,
  verifyVerificationReceipt,
} from "../verifier/verification-receipt/verify.js";
import { ReceiptdError } from "./errors.js";
import {
  isConnectionFailure,
  type RetryOptions,
  type RetryPolicy,
  rateLimitResetMs,
  retryAfterMs,
  retryableStatus,
  retryDelayMs,
  retryPolicy,
} from "./retry.js";
import { type PaymentCredential, type PaymentHook, readChallenge } from "./x402.js";

export {
  type ClientFailureCode,
  isReceiptdError,
  ReceiptdError,
  type ReceiptdErrorCode,
  type ServiceErrorCode,
} from "./errors.js";
export type { RetryOptions } from "./retry.js";
export {
  type ExactPayerOptions,
  type PaymentChallenge,
  type PaymentCredential,
  type PaymentHook,
  type TypedDataSigner,
  x402ExactPayer,
} from "./x402.js";

/** A bundle: its raw JSON bytes (sent as they are), its JSON text, or a parsed object. */
export type BundleInput = Uint8Array | string | Readonly<Record<string, unknown>>;

/** The verdict payload of `POST /verify` (service.md §1). */
export interface VerdictPayload extends Omit<VerifyResult, "verdict"> {
  verdict: Verdict;
  service?: string;
  /** With `receipt: true`: the signed verification receipt. */
  verification_receipt?: Readonly<Record<string, unknown>>;
  /** With `receipt: true`, when no receipt could be issued. */
  verification_receipt_error?: string;
  cache?: { hit: boolean; cached_at: string; age_s?: number };
}

export interface ClientOptions {
  /** The service's base URL, e.g. `https://receiptd.example` (a path prefix is kept). */
  baseUrl: string;
  /** An API key, sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Pays x402 challenges (see `x402ExactPayer`); without it a 402 fails the call. */
  payment?: PaymentHook;
  /** Keep-alive connections in the pool (default 8). */
  connections?: number;
  retry?: RetryOptions;
  /** Sent as `User-Agent` (default `receiptd-client`). */
  userAgent?: string;
}

export interface VerifyOptions {
  requireAnchor?: boolean;
  /** Ask for a signed verification receipt (`?receipt=1`). */
  receipt?: boolean;
  /** Single bundles only: the service's opt-in digest cache (`?cache=1`). */
  cache?: boolean;
}

export interface VerifyManyOptions<T> extends Omit<VerifyOptions, "cache"> {
  /** Batch requests in flight at once (default 4). */
  concurrency?: number;
  /** `"input"` (default) yields in the source's order; `"completion"` as batches answer. */
  order?: "input" | "completion";
  /** The bundle of a source item (default: the item itself, which must be a `BundleInput`). */
  bundleOf?: (item: T) => BundleInput;
}

/** One input of `verifyMany` and what became of it: a result, or why there is none. */
export interface BulkOutcome<T> {
  /** Position in the source, from 0. */
  index: number;
  item: T;
  result: VerdictPayload | null;
  /** Set when this input got no result: `bundle_not_json`, `bundle_too_large`. */
  error: ReceiptdError | null;
}

/** The `limits` of `GET /info` that shape requests. */
export interface ServiceLimits {
  max_body_bytes: number;
  /** The body limit of a request without a key, pass or payment. */
  max_anonymous_body_bytes?: number;
  max_batch: number;
}

export interface ServiceInfo {
  service: string;
  implementation: string;
  verifier_version: string;
  limits: ServiceLimits & Record<string, unknown>;
  verification_receipt: { issuer: string } & Record<string, unknown>;
  [member: string]: unknown;
}

export interface AnchorCheck {
  status: string;
  code: string;
  detail: string;
  file_digest: string | null;
  attestations: unknown[];
  confirmed?: unknown;
}

export interface ReceiptCheckAnswer {
  valid: boolean;
  errors: string[];
  issuer: string | null;
  verdict: string | null;
  verified_at: string | null;
  bundle_digest: string | null;
  digest_match: boolean | null;
  service?: string;
}

/** An offline check of a verification receipt (`checkVerificationReceipt`). */
export interface OfflineReceiptCheck extends ReceiptCheck {
  /** False when an expected issuer was given and the receipt names another one. */
  issuer_expected: boolean | null;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: unknown;
}

interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  body?: Uint8Array;
  /** Sent as `Idempotency-Key` on every attempt of this call. */
  idempotencyKey?: string;
  /** 304 and 404 answers are results for these reads, not errors. */
  acceptStatus?: readonly number[];
}

/** The most a single x402 call asks the payment hook to pay (a declined authorization…). */
const MAX_PAYMENTS_PER_CALL = 3;
/** `{"bundles":[` + `]}`: what a batch body adds around its bundles. */
const BATCH_FRAME_BYTES = 14;

function encodeBundle(bundle: BundleInput): Uint8Array {
  if (bundle instanceof Uint8Array) return bundle;
  if (typeof bundle === "string") return Buffer.from(bundle, "utf8");
  return Buffer.from(JSON.stringify(bundle), "utf8");
}

function flags(options: VerifyOptions): string {
  const query = new URLSearchParams();
  if (options.requireAnchor) query.set("require_anchor", "1");
  if (options.receipt) query.set("receipt", "1");
  if (options.cache) query.set("cache", "1");
  const text = query.toString();
  return text === "" ? "" : `?${text}`;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function objectOf(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/**
 * Checks a verification receipt offline with the package's own verifier: its signature, its
 * form, the bundle digest when `bundle` is given, and that its issuer is `issuer` when given
 * (a receipt is self-signed: only the issuer you expect makes it the service's word).
 */
export function checkVerificationReceipt(
  receipt: unknown,
  options: { bundle?: BundleInput; issuer?: string } = {},
): OfflineReceiptCheck {
  const bundle =
    options.bundle === undefined
      ? undefined
      : options.bundle instanceof Uint8Array
        ? options.bundle
        : typeof options.bundle === "string"
          ? Buffer.from(options.bundle, "utf8")
          : fromPlain(options.bundle);
  const check = verifyVerificationReceipt(
    fromPlain(receipt),
    bundle === undefined ? {} : { bundle },
  );
  const issuerExpected = options.issuer === undefined ? null : check.issuer === options.issuer;
  return {
    ...check,
    valid: check.valid && issuerExpected !== false,
    issuer_expected: issuerExpected,
  };
}

export class ReceiptdClient {
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #apiKey: string | undefined;
  readonly #payment: PaymentHook | undefined;
  readonly #retry: RetryPolicy;
  readonly #userAgent: string;
  #info: Promise<ServiceInfo> | null = null;

  constructor(options: ClientOptions) {
    const url = new URL(options.baseUrl);
    this.#prefix = url.pathname.replace(/\/+$/, "");
    this.#pool = new Pool(url.origin, {
      connections: options.connections ?? 8,
      keepAliveTimeout: 10_000,
    });
    this.#apiKey = options.apiKey;
    this.#payment = options.payment;
    this.#retry = retryPolicy(options.retry);
    this.#userAgent = options.userAgent ?? "receiptd-client";
  }

  /** `GET /info`, read once per client. */
  info(): Promise<ServiceInfo> {
    if (this.#info === null) {
      this.#info = this.#call({ method: "GET", path: "/info" }).then(
        (answer) => answer.json as ServiceInfo,
      );
      this.#info.catch(() => {
        this.#info = null;
      });
    }
    return this.#info;
  }

  /** `POST /verify` with one bundle. */
  async verify(bundle: BundleInput, options: VerifyOptions = {}): Promise<VerdictPayload> {
    const answer = await this.#call({
      method: "POST",
      path: `/verify${flags(options)}`,
      body: encodeBundle(bundle),
      ...this.#paidKey(),
    });
    return answer.json as VerdictPayload;
  }

  /**
   * Verifies every bundle of `source` in batches within the service's `max_batch` and body
   * limit (`GET /info`), `concurrency` batches in flight. The source is read only as fast as
   * results are taken, so an endless source runs in bounded memory.
   */
  async *verifyMany<T = BundleInput>(
    source: Iterable<T> | AsyncIterable<T>,
    options: VerifyManyOptions<T> = {},
  ): AsyncGenerator<BulkOutcome<T>, void, undefined> {
    const { limits } = await this.info();
    const maxItems = Math.max(1, limits.max_batch);
    // A request with neither a key nor a payment is held to the anonymous body limit.
    const maxBytes =
      this.#apiKey === undefined && this.#payment === undefined
        ? (limits.max_anonymous_body_bytes ?? limits.max_body_bytes)
        : limits.max_body_bytes;
    const concurrency = Math.max(1, options.concurrency ?? 4);
    const bundleOf = options.bundleOf ?? ((item: T) => item as unknown as BundleInput);
    const query = flags({ requireAnchor: options.requireAnchor, receipt: options.receipt });
    const iterator =
      Symbol.asyncIterator in source
        ? (source as AsyncIterable<T>)[Symbol.asyncIterator]()
        : (source as Iterable<T>)[Symbol.iterator]();

    interface Entry {
      index: number;
      item: T;
      bytes: Uint8Array;
    }
    let nextIndex = 0;
    let exhausted = false;
    let carried: Entry | null = null;
    /** Inputs refused before sending, yielded in their place in the order. */
    const nextBatch = async (): Promise<{ send: Entry[]; refused: BulkOutcome<T>[] }> => {
      const send: Entry[] = [];
      const refused: BulkOutcome<T>[] = [];
      let bytes = BATCH_FRAME_BYTES;
      while (send.length < maxItems) {
        let entry = carried;
        carried = null;
        if (entry === null) {
          if (exhausted) break;
          const step = await iterator.next();
          if (step.done) {
            exhausted = true;
            break;
          }
          entry = {
            index: nextIndex++,
            item: step.value,
            bytes: encodeBundle(bundleOf(step.value)),
          };
        }
        if (entry.bytes.length + BATCH_FRAME_BYTES > maxBytes) {
          refused.push({
            index: entry.index,
            item: entry.item,
            result: null,
            error: new ReceiptdError(
              "bundle_too_large",
              `${entry.bytes.length} bytes exceeds the service's body limit ${maxBytes}`,
            ),
          });
          continue;
        }
        const added = entry.bytes.length + (send.length > 0 ? 1 : 0);
        if (send.length > 0 && bytes + added > maxBytes) {
          carried = entry;
          break;
        }
        bytes += added;
        send.push(entry);
      }
      return { send, refused };
    };

    const run = async (batch: { send: Entry[]; refused: BulkOutcome<T>[] }) => {
      const outcomes = [...batch.refused, ...(await this.#verifyBatch(batch.send, query))];
      outcomes.sort((a, b) => a.index - b.index);
      return outcomes;
    };

    type Slot = { promise: Promise<Slot>; outcomes: BulkOutcome<T>[] | null };
    const inFlight: Slot[] = [];
    const start = (batch: { send: Entry[]; refused: BulkOutcome<T>[] }) => {
      const slot: Slot = { promise: Promise.resolve(null as unknown as Slot), outcomes: null };
      slot.promise = run(batch).then((outcomes) => {
        slot.outcomes = outcomes;
        return slot;
      });
      // A batch that fails is reported when its turn is awaited, not as an unhandled rejection.
      slot.promise.catch(() => {});
      inFlight.push(slot);
    };
    try {
      for (;;) {
        while (inFlight.length < concurrency) {
          const batch = await nextBatch();
          if (batch.send.length === 0 && batch.refused.length === 0) break;
          start(batch);
        }
        if (inFlight.length === 0) return;
        const done =
          options.order === "completion"
            ? await Promise.race(inFlight.map((slot) => slot.promise))
            : await (inFlight[0] as Slot).promise;
        inFlight.splice(inFlight.indexOf(done), 1);
        yield* done.outcomes ?? [];
      }
    } finally {
      if (!exhausted) await iterator.return?.();
    }
  }

  /** One batch; inputs the service finds not JSON are found and reported, the rest resent. */
  async #verifyBatch<T>(
    entries: readonly { index: number; item: T; bytes: Uint8Array }[],
    query: string,
  ): Promise<BulkOutcome<T>[]> {
    if (entries.length === 0) return [];
    const body = Buffer.concat([
      Buffer.from('{"bundles":['),
      ...entries.flatMap((entry, at) =>
        at === 0 ? [entry.bytes] : [Buffer.from(","), entry.bytes],
      ),
      Buffer.from("]}"),
    ]);
    try {
      const answer = await this.#call({
        method: "POST",
        path: `/verify${query}`,
        body,
        ...this.#paidKey(),
      });
      const results = objectOf(answer.json)?.results;
      if (!Array.isArray(results) || results.length !== entries.length) {
        throw new ReceiptdError(
          "unexpected_response",
          "a batch answer without one result per bundle",
        );
      }
      return entries.map((entry, at) => ({
        index: entry.index,
        item: entry.item,
        result: results[at] as VerdictPayload,
        error: null,
      }));
    } catch (error) {
      if (!(error instanceof ReceiptdError && error.code === "invalid_json")) throw error;
      // Which inputs spoiled the body: each is parsed strictly, as the service parses it.
      const refused: BulkOutcome<T>[] = [];
      const good: (typeof entries)[number][] = [];
      for (const entry of entries) {
        try {
          parseJson(entry.bytes);
          good.push(entry);
        } catch (parseError) {
          if (!(parseError instanceof StrictJsonError)) throw parseError;
          refused.push({
            index: entry.index,
            item: entry.item,
            result: null,
            error: new ReceiptdError("bundle_not_json", parseError.message),
          });
        }
      }
      if (refused.length === 0) throw error;
      return [...refused, ...(await this.#verifyBatch(good, query))];
    }
  }

  /** `POST /verify-receipt`: the service's check of a verification receipt. */
  async verifyReceipt(
    receipt: Readonly<Record<string, unknown>>,
    options: { bundle?: BundleInput; revocations?: readonly unknown[] } = {},
  ): Promise<ReceiptCheckAnswer> {
    const request: Record<string, unknown> = { receipt };
    if (options.bundle instanceof Uint8Array || typeof options.bundle === "string") {
      request.bundle_bytes_b64 = Buffer.from(encodeBundle(options.bundle)).toString("base64");
    } else if (options.bundle !== undefined) {
      request.bundle = options.bundle;
    }
    if (options.revocations !== undefined) request.revocations = options.revocations;
    const answer = await this.#call({
      method: "POST",
      path: "/verify-receipt",
      body: Buffer.from(JSON.stringify(request)),
      ...this.#paidKey(),
    });
    return answer.json as ReceiptCheckAnswer;
  }

  /**
   * Checks a verification receipt offline (no request but `/info`, once, for the issuer the
   * receipt must name): see `checkVerificationReceipt`.
   */
  async checkReceipt(
    receipt: unknown,
    options: { bundle?: BundleInput } = {},
  ): Promise<OfflineReceiptCheck> {
    const issuer = (await this.info()).verification_receipt.issuer;
    return checkVerificationReceipt(receipt, { ...options, issuer });
  }

  /** `POST /verify-anchor`: an OpenTimestamps proof (base64) against a digest. */
  async verifyAnchor(request: {
    proof: string;
    digest: string;
    headers?: Readonly<Record<string, string>>;
  }): Promise<AnchorCheck> {
    const answer = await this.#call({
      method: "POST",
      path: "/verify-anchor",
      body: Buffer.from(JSON.stringify(request)),
      ...this.#paidKey(),
    });
    return answer.json as AnchorCheck;
  }

  /** `POST /notarize`: a signed context notarization (docs/notarization.md). */
  async notarize(request: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    const answer = await this.#call({
      method: "POST",
      path: "/notarize",
      body: Buffer.from(JSON.stringify(request)),
      idempotencyKey: randomUUID(),
    });
    return answer.json as Record<string, unknown>;
  }

  /** Anchor hosting (service.md §2). */
  readonly anchors = {
    /** `POST /anchors`: stores a proof for a digest (idempotent by digest and key). */
    store: async (request: {
      digest: string;
      proof: string;
      note?: string;
    }): Promise<Record<string, unknown>> => {
      const answer = await this.#call({
        method: "POST",
        path: "/anchors",
        body: Buffer.from(JSON.stringify(request)),
        idempotencyKey: randomUUID(),
      });
      return answer.json as Record<string, unknown>;
    },
    /** `GET /anchors/{digest}`: the stored document, or null when none is stored. */
    get: async (digest: string): Promise<Record<string, unknown> | null> => {
      const answer = await this.#call({
        method: "GET",
        path: `/anchors/${encodeURIComponent(digest)}`,
        acceptStatus: [404],
      });
      return answer.status === 404 ? null : (answer.json as Record<string, unknown>);
    },
  };

  /** Closes the pool's connections once requests in flight have answered. */
  close(): Promise<void> {
    return this.#pool.close();
  }

  /** A key for paid calls: only they are charged per call, so only they need one. */
  #paidKey(): { idempotencyKey?: string } {
    return this.#payment === undefined ? {} : { idempotencyKey: randomUUID() };
  }

  /** The headers of the 402 an unpaid, empty request to `path` is answered with. */
  async #challengeFor(path: string): Promise<Answer["headers"]> {
    const response = await this.#pool.request({
      method: "POST",
      path: `${this.#prefix}${path}`,
      headers: { "content-type": "application/json", "user-agent": this.#userAgent },
      body: "{}",
    });
    await response.body.dump();
    return response.headers;
  }

  async #call(spec: RequestSpec): Promise<Answer> {
    let payment: PaymentCredential | null = null;
    let payments = 0;
    for (let attempt = 1; ; attempt += 1) {
      const headers: Record<string, string> = {
        accept: "application/json",
        "user-agent": this.#userAgent,
      };
      if (spec.body !== undefined) headers["content-type"] = "application/json";
      if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
      if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
      if (payment !== null) headers[payment.header.toLowerCase()] = payment.value;
      let status: number;
      let responseHeaders: Answer["headers"];
      let text: string;
      try {
        const response = await this.#pool.request({
          method: spec.method,
          path: `${this.#prefix}${spec.path}`,
          headers,
          body: spec.body,
        });
        status = response.statusCode;
        responseHeaders = response.headers;
        text = await response.body.text();
      } catch (error) {
        if (!isConnectionFailure(error)) throw error;
        if (attempt >= this.#retry.maxAttempts) {
          throw new ReceiptdError(
            "connection_failed",
            `no answer after ${attempt} attempts: ${(error as Error).message}`,
            { attempts: attempt },
            { cause: error },
          );
        }
        await sleep(retryDelayMs(this.#retry, attempt - 1, undefined) ?? 0);
        continue;
      }
      const requestId = headerText(responseHeaders["x-request-id"]) ?? null;
      let json: unknown = null;
      try {
        json = text === "" ? null : JSON.parse(text);
      } catch {
        json = null;
      }
      if ((status >= 200 && status < 300) || spec.acceptStatus?.includes(status)) {
        if (json === null && status !== 304 && status !== 404) {
          throw new ReceiptdError("unexpected_response", `a ${status} answer that is not JSON`, {
            status,
            requestId,
            attempts: attempt,
          });
        }
        return { status, headers: responseHeaders, json };
      }
      const body = objectOf(json);
      const code = typeof body?.error === "string" ? body.error : null;
      const fields = { status, requestId, body, attempts: attempt };
      // A body over the limit of requests without a credential is refused before any 402:
      // the challenge is then asked for with an empty object, and the body sent paid.
      const needsChallenge =
        status === 413 && payment === null && spec.body !== undefined && spec.body.length > 2;
      if (
        (status === 402 || needsChallenge) &&
        this.#payment !== undefined &&
        payments < MAX_PAYMENTS_PER_CALL
      ) {
        const challengeHeaders = needsChallenge
          ? await this.#challengeFor(spec.path)
          : responseHeaders;
        const challenge = readChallenge(headerText(challengeHeaders["payment-required"]));
        const credential = challenge === null ? null : await this.#payment(challenge);
        if (credential === null) {
          throw new ReceiptdError("payment_declined", "the payment hook declined to pay", fields);
        }
        payment = credential;
        payments += 1;
        continue;
      }
      if (retryableStatus(status, code) && attempt < this.#retry.maxAttempts) {
        const hint =
          retryAfterMs(responseHeaders["retry-after"]) ??
          (status === 429 ? rateLimitResetMs(responseHeaders.ratelimit) : undefined);
        const delay = retryDelayMs(this.#retry, attempt - 1, hint);
        if (delay !== null) {
          await sleep(delay);
          continue;
        }
      }
      const detail =
        typeof body?.detail === "string"
          ? body.detail
          : typeof body?.hint === "string"
            ? body.hint
            : `HTTP ${status}`;
      throw new ReceiptdError(
        code ?? (status === 402 ? "payment_required" : `http_${status}`),
        detail,
        fields,
      );
    }
  }
}

/** A client for `baseUrl` (see `ClientOptions`). */
export function createClient(options: ClientOptions): ReceiptdClient {
  return new ReceiptdClient(options);
}
