/**
 * HTTP client for an x402 facilitator's `/verify` and `/settle` (protocols.md §1.5).
 *
 * Every answer is classified into what the caller must do with the client's request:
 * - `valid` / `settled`: go on;
 * - `declined`: the facilitator said the payment is invalid or failed → answer 402;
 * - `unknown`: no usable answer (connection refused, timeout, 5xx, a 2xx we cannot read,
 *   any other status without a well-formed answer) → answer 502. For /settle this matters:
 *   the transfer may or may not have happened, so the caller must not serve the request and
 *   must not release the nonce.
 *
 * Request and response bodies hold payment authorizations: this module never logs, and its
 * `detail` strings name only the endpoint, status and error class, never body content.
 */
import type { Dispatcher } from "undici";
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { type JsonObject, jsonObject } from "../verifier/json/value.js";
import type { VerifiedPayment } from "./eip3009.js";
import { PaymentConfigError } from "./errors.js";
import { type Hex, isAddressText, isTransactionHash } from "./formats.js";

export interface FacilitatorClientOptions {
  /** `FACILITATOR_URL`; `/verify` and `/settle` are resolved under it. */
  url: string;
  verifyTimeoutMs?: number;
  /** Settlement waits for the transfer's receipt on chain, so it gets longer. */
  settleTimeoutMs?: number;
  /** Extra request headers (a production facilitator's credentials). */
  headers?: Readonly<Record<string, string>>;
  maxResponseBytes?: number;
  /** An undici dispatcher to use instead of the client's own connection pool. */
  dispatcher?: Dispatcher;
}

export const DEFAULT_VERIFY_TIMEOUT_MS = 10_000;
export const DEFAULT_SETTLE_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const CONNECT_TIMEOUT_MS = 5_000;

export type FacilitatorFailureCode =
  | "facilitator_unreachable"
  | "facilitator_timeout"
  | "facilitator_error"
  | "facilitator_bad_response";

export interface FacilitatorUnknown {
  readonly status: "unknown";
  readonly code: FacilitatorFailureCode;
  readonly detail: string;
}

export interface FacilitatorDeclined {
  readonly status: "declined";
  /** The facilitator's `invalidReason` / `errorReason` (a snake_case x402 reason). */
  readonly reason: string;
  readonly payer: string | null;
}

export type VerifyOutcome =
  | { readonly status: "valid"; readonly payer: string | null }
  | FacilitatorDeclined
  | FacilitatorUnknown;

export type SettleOutcome =
  | {
      readonly status: "settled";
      readonly transaction: Hex;
      readonly network: string;
      readonly payer: string | null;
    }
  | FacilitatorDeclined
  | FacilitatorUnknown;

/**
 * Whether an authorization was settled (`POST /authorization-state`, the question receiptd
 * asks at start about a settlement a crash interrupted): `unknown` when the facilitator cannot
 * tell, or does not offer the question (a real one may not; the chain's EIP-3009
 * `authorizationState` can).
 */
export type AuthorizationState =
  | { readonly status: "settled"; readonly transaction: Hex }
  | { readonly status: "not_settled" }
  | FacilitatorUnknown;

/** The body of a /verify or /settle call. */
export interface FacilitatorRequest {
  readonly x402Version: 1 | 2;
  readonly paymentPayload: JsonObject;
  readonly paymentRequirements: JsonObject;
}

/** The facilitator request for a locally verified payment: its payload verbatim, and the
 * requirement it matched in the payment's own wire version. */
export function facilitatorRequest(verified: VerifiedPayment): FacilitatorRequest {
  const version = verified.payment.x402Version;
  const requirements = version === 1 ? verified.requirement.v1 : verified.requirement.v2;
  if (requirements === null) {
    throw new TypeError(`the matched requirement has no v${version} form`);
  }
  return {
    x402Version: version,
    paymentPayload: verified.payment.raw,
    paymentRequirements: requirements,
  };
}

const REASON = /^[A-Za-z0-9_.:-]{1,128}$/;

function reasonFrom(value: unknown, fallback: string): string {
  return typeof value === "string" && REASON.test(value) ? value : fallback;
}

function payerFrom(body: JsonObject): string | null {
  const payer = body.get("payer");
  return typeof payer === "string" && isAddressText(payer) ? payer : null;
}

function unknown(code: FacilitatorFailureCode, detail: string): FacilitatorUnknown {
  return { status: "unknown", code, detail };
}

interface RawAnswer {
  readonly statusCode: number;
  /** The parsed JSON object, or null when the body was not one. */
  readonly body: JsonObject | null;
}

export class FacilitatorClient {
  readonly #verifyUrl: URL;
  readonly #settleUrl: URL;
  readonly #stateUrl: URL;
  readonly #verifyTimeoutMs: number;
  readonly #settleTimeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #maxResponseBytes: number;
  #dispatcher: Promise<Dispatcher> | undefined;
  readonly #ownsDispatcher: boolean;

  constructor(options: FacilitatorClientOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new PaymentConfigError(`facilitator URL '${options.url}' is not a URL`);
    }
    if (base.protocol !== "http:" && base.protocol !== "https:") {
      throw new PaymentConfigError("the facilitator URL must be http or https");
    }
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    base.search = "";
    base.hash = "";
    this.#verifyUrl = new URL("verify", base);
    this.#settleUrl = new URL("settle", base);
    this.#stateUrl = new URL("authorization-state", base);
    this.#verifyTimeoutMs = options.verifyTimeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS;
    this.#settleTimeoutMs = options.settleTimeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS;
    this.#headers = {
      ...options.headers,
      "content-type": "application/json",
      accept: "application/json",
    };
    this.#maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher === undefined ? undefined : Promise.resolve(options.dispatcher);
  }

  async verify(body: FacilitatorRequest): Promise<VerifyOutcome> {
    const answer = await this.#post(this.#verifyUrl, body, this.#verifyTimeoutMs);
    if ("status" in answer) return answer;
    const { statusCode, body: json } = answer;
    if (statusCode >= 500)
      return unknown("facilitator_error", `/verify answered HTTP ${statusCode}`);
    const ok = statusCode >= 200 && statusCode < 300;
    const isValid = json?.get("isValid");
    if (json !== null && isValid === false && (ok || statusCode >= 400)) {
      const reason = reasonFrom(json.get("invalidReason"), "unexpected_verify_error");
      return { status: "declined", reason, payer: payerFrom(json) };
    }
    if (json !== null && isValid === true && ok) return { status: "valid", payer: payerFrom(json) };
    return ok
      ? unknown("facilitator_bad_response", "/verify answered without a boolean isValid")
      : unknown("facilitator_error", `/verify answered HTTP ${statusCode}`);
  }

  async settle(body: FacilitatorRequest): Promise<SettleOutcome> {
    const answer = await this.#post(this.#settleUrl, body, this.#settleTimeoutMs);
    if ("status" in answer) return answer;
    const { statusCode, body: json } = answer;
    if (statusCode >= 500)
      return unknown("facilitator_error", `/settle answered HTTP ${statusCode}`);
    const ok = statusCode >= 200 && statusCode < 300;
    const success = json?.get("success");
    if (json !== null && success === false && (ok || statusCode >= 400)) {
      const reason = reasonFrom(json.get("errorReason"), "unexpected_settle_error");
      return { status: "declined", reason, payer: payerFrom(json) };
    }
    if (json !== null && success === true && ok) {
      const transaction = json.get("transaction");
      // "Success" without a transaction we can name is not a settlement we can vouch for.
      if (typeof transaction !== "string" || !isTransactionHash(transaction)) {
        return unknown("facilitator_bad_response", "/settle succeeded without a transaction hash");
      }
      const network = json.get("network");
      return {
        status: "settled",
        transaction,
        network: typeof network === "string" ? network : "",
        payer: payerFrom(json),
      };
    }
    return ok
      ? unknown("facilitator_bad_response", "/settle answered without a boolean success")
      : unknown("facilitator_error", `/settle answered HTTP ${statusCode}`);
  }

  async authorizationState(body: FacilitatorRequest): Promise<AuthorizationState> {
    const answer = await this.#post(this.#stateUrl, body, this.#verifyTimeoutMs);
    if ("status" in answer) return answer;
    const { statusCode, body: json } = answer;
    const settled = json?.get("settled");
    if (statusCode === 200 && settled === false) return { status: "not_settled" };
    const transaction = json?.get("transaction");
    if (statusCode === 200 && settled === true && typeof transaction === "string") {
      if (isTransactionHash(transaction)) return { status: "settled", transaction };
    }
    return unknown("facilitator_bad_response", `/authorization-state answered HTTP ${statusCode}`);
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher && this.#dispatcher !== undefined) {
      await (await this.#dispatcher).close();
    }
  }

  /**
   * undici is loaded on the first payment, not at startup: it is about 20 MB of resident
   * memory that a service taking no x402 payments never needs.
   */
  #connections(): Promise<Dispatcher> {
    this.#dispatcher ??= import("undici").then(
      ({ Agent }) => new Agent({ connectTimeout: CONNECT_TIMEOUT_MS, connections: 16 }),
    );
    return this.#dispatcher;
  }

  async #post(
    url: URL,
    body: FacilitatorRequest,
    timeoutMs: number,
  ): Promise<RawAnswer | FacilitatorUnknown> {
    const endpoint = url.pathname.slice(url.pathname.lastIndexOf("/"));
    const signal = AbortSignal.timeout(timeoutMs);
    const text = dumpCompact(
      jsonObject({
        x402Version: body.x402Version,
        paymentPayload: body.paymentPayload,
        paymentRequirements: body.paymentRequirements,
      }),
    );
    try {
      const dispatcher = await this.#connections();
      const response = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers: this.#headers,
        body: text,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const bytes = await this.#readLimited(response.body);
      if (bytes === null) {
        return unknown("facilitator_bad_response", `${endpoint} answer exceeds the size limit`);
      }
      return { statusCode: response.statusCode, body: jsonObjectOf(bytes) };
    } catch (error) {
      return classifyFailure(error, signal, endpoint);
    }
  }

  async #readLimited(body: Dispatcher.ResponseData["body"]): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of body) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      length += buffer.length;
      if (length > this.#maxResponseBytes) {
        body.destroy();
        return null;
      }
      chunks.push(buffer);
    }
    return Buffer.concat(chunks, length);
  }
}

function jsonObjectOf(bytes: Buffer): JsonObject | null {
  try {
    const value = parseJson(bytes);
    return value instanceof Map ? value : null;
  } catch {
    return null;
  }
}

const TIMEOUT_CODES = new Set([
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function classifyFailure(
  error: unknown,
  signal: AbortSignal,
  endpoint: string,
): FacilitatorUnknown {
  const code =
    typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  if (signal.aborted || TIMEOUT_CODES.has(code)) {
    return unknown("facilitator_timeout", `${endpoint} did not answer in time`);
  }
  const name = error instanceof Error ? error.name : "error";
  return unknown("facilitator_unreachable", `${endpoint} failed: ${code || name}`);
}
