/**
 * A LOCAL STAND-IN for an internet x402 facilitator, for tests and `npm run dev:facilitator`.
 * It never talks to a chain and moves no money. Point `FACILITATOR_URL` at it only in
 * development; production needs a real facilitator (protocols.md §1.5).
 *
 * What it does check is real: `/verify` and `/settle` parse the request like a facilitator,
 * match the payload to the requirements, and run the same EIP-3009 verification as the
 * service (signer recovery, low-s, v, payee, amount, validity window). In place of the chain's
 * `authorizationState` it keeps its own set of settled authorizations: an authorization
 * settles once; verifying or settling it again is declined with `invalid_transaction_state`.
 * A settlement's transaction hash is fake but deterministic: `0x` + SHA-256 of the network,
 * token, payer and nonce, so repeated runs name the same "transaction".
 *
 * `POST /authorization-state` takes the body of a `/settle` and answers whether that
 * authorization was settled here (`{"settled": true, "transaction"}` or `{"settled": false}`):
 * what receiptd asks at start about settlements a crash interrupted, in place of the token's
 * on-chain `authorizationState(payer, nonce)`.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { codedErrorClass } from "../verifier/coded-error.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { type JsonObject, type JsonValue, jsonObject } from "../verifier/json/value.js";
import { type PaymentPayload, parsePaymentPayload } from "./codec.js";
import { verifyExactPayment } from "./eip3009.js";
import { PaymentError } from "./errors.js";
import { nonceLedgerKey } from "./nonce-ledger.js";
import { type ExactRequirement, NETWORKS, requirementFromWire } from "./requirements.js";

export interface FacilitatorPeerOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** Milliseconds since the epoch (`Date.now` by default). */
  clock?: () => number;
}

export interface FacilitatorPeer {
  /** Base URL to use as `FACILITATOR_URL`. */
  readonly url: string;
  close(): Promise<void>;
}

/** The address the peer claims to settle from (`/supported` `signers`); it signs nothing. */
export const PEER_SIGNER = "0x0000000000000000000000000000000000000402";
const MAX_REQUEST_BYTES = 64 * 1024;

interface ParsedRequest {
  readonly x402Version: 1 | 2;
  readonly payment: PaymentPayload;
  readonly requirement: ExactRequirement;
}

class BadRequest extends codedErrorClass("bad_request") {}

function parseRequest(bytes: Buffer): ParsedRequest {
  let body: JsonValue;
  try {
    body = parseJson(bytes);
  } catch {
    throw new BadRequest("request body is not strict JSON");
  }
  if (!(body instanceof Map)) throw new BadRequest("request body must be an object");
  const version = body.get("x402Version");
  if (version !== 1 && version !== 2) {
    throw new PaymentError("invalid_x402_version", "x402Version must be 1 or 2");
  }
  const payment = parsePaymentPayload(body.get("paymentPayload") ?? null, version);
  const requirement = requirementFromWire(body.get("paymentRequirements") ?? null, version);
  return { x402Version: version, payment, requirement };
}

function transactionHash(network: string, key: string): string {
  return `0x${createHash("sha256").update(`${network}|${key}`).digest("hex")}`;
}

function networkName(parsed: ParsedRequest): string {
  const network = parsed.requirement.network;
  return parsed.x402Version === 1 ? network.v1Name : network.caip2;
}

function supported(): JsonObject {
  const kinds: JsonObject[] = [];
  for (const network of NETWORKS) {
    kinds.push(jsonObject({ x402Version: 1, scheme: "exact", network: network.v1Name }));
    kinds.push(jsonObject({ x402Version: 2, scheme: "exact", network: network.caip2 }));
  }
  return jsonObject({
    kinds,
    extensions: [],
    signers: jsonObject({ "eip155:*": [PEER_SIGNER] }),
  });
}

function send(response: ServerResponse, statusCode: number, body: JsonObject): void {
  const text = dumpCompact(body);
  response.writeHead(statusCode, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

async function readBody(request: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    length += buffer.length;
    if (length > MAX_REQUEST_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, length);
}

export async function startFacilitatorPeer(
  options: FacilitatorPeerOptions = {},
): Promise<FacilitatorPeer> {
  const clock = options.clock ?? Date.now;
  // Stands in for the token's on-chain `authorizationState`: settled authorizations.
  const settled = new Set<string>();

  const verify = async (parsed: ParsedRequest): Promise<{ payer: string; key: string }> => {
    const verified = await verifyExactPayment(parsed.payment, [parsed.requirement], { now: clock });
    const key = nonceLedgerKey({
      network: parsed.requirement.network.caip2,
      asset: parsed.requirement.asset,
      payer: verified.payer,
      nonce: verified.authorization.nonce,
    });
    if (settled.has(key)) {
      throw new PaymentError("nonce_already_used", "this authorization was already used");
    }
    return { payer: verified.payer, key };
  };

  const handleVerify = async (parsed: ParsedRequest): Promise<JsonObject> => {
    try {
      const { payer } = await verify(parsed);
      return jsonObject({ isValid: true, payer });
    } catch (error) {
      if (!(error instanceof PaymentError)) throw error;
      return jsonObject({
        isValid: false,
        invalidReason: error.reasonFor(parsed.x402Version),
        invalidMessage: error.detail,
        payer: parsed.payment.payload.authorization.from,
      });
    }
  };

  const handleSettle = async (parsed: ParsedRequest): Promise<JsonObject> => {
    const network = networkName(parsed);
    try {
      const { payer, key } = await verify(parsed);
      // Re-checked after the await above: of two concurrent settlements, one wins.
      if (settled.has(key)) {
        throw new PaymentError("nonce_already_used", "this authorization was already used");
      }
      settled.add(key);
      const answer = jsonObject({
        success: true,
        payer,
        transaction: transactionHash(parsed.requirement.network.caip2, key),
        network,
      });
      if (parsed.x402Version === 2) answer.set("amount", parsed.requirement.amount.toString());
      return answer;
    } catch (error) {
      if (!(error instanceof PaymentError)) throw error;
      return jsonObject({
        success: false,
        errorReason: error.reasonFor(parsed.x402Version),
        payer: parsed.payment.payload.authorization.from,
        transaction: "",
        network,
      });
    }
  };

  const handleState = (parsed: ParsedRequest): JsonObject => {
    const authorization = parsed.payment.payload.authorization;
    const key = nonceLedgerKey({
      network: parsed.requirement.network.caip2,
      asset: parsed.requirement.asset,
      payer: authorization.from,
      nonce: authorization.nonce,
    });
    if (!settled.has(key)) return jsonObject({ settled: false });
    return jsonObject({
      settled: true,
      transaction: transactionHash(parsed.requirement.network.caip2, key),
    });
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? "/", "http://peer").pathname.replace(/\/+$/, "");
    if (path === "/supported") {
      if (request.method !== "GET") return send(response, 405, jsonObject({ error: "method" }));
      return send(response, 200, supported());
    }
    if (path !== "/verify" && path !== "/settle" && path !== "/authorization-state") {
      return send(response, 404, jsonObject({ error: "not_found" }));
    }
    if (request.method !== "POST") return send(response, 405, jsonObject({ error: "method" }));
    const isVerify = path === "/verify";
    const refuse = (reason: string, detail: string) =>
      send(
        response,
        400,
        isVerify
          ? jsonObject({ isValid: false, invalidReason: reason, invalidMessage: detail })
          : jsonObject({ success: false, errorReason: reason, transaction: "", network: "" }),
      );
    const bytes = await readBody(request);
    if (bytes === null) return send(response, 413, jsonObject({ error: "body_too_large" }));
    let parsed: ParsedRequest;
    try {
      parsed = parseRequest(bytes);
    } catch (error) {
      if (error instanceof BadRequest) return refuse("invalid_payload", error.message);
      if (error instanceof PaymentError) return refuse(error.reason, error.detail);
      throw error;
    }
    if (path === "/authorization-state") return send(response, 200, handleState(parsed));
    send(response, 200, isVerify ? await handleVerify(parsed) : await handleSettle(parsed));
  };

  const server = createServer((request, response) => {
    route(request, response).catch(() => {
      if (!response.headersSent) send(response, 500, jsonObject({ error: "internal_error" }));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
