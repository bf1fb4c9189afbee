/**
 * JSON-RPC 2.0 messages as MCP uses them (protocols.md §3.2): telling requests,
 * notifications and responses apart in strictly parsed values, and writing responses as
 * text. Responses are assembled from JSON text so that ids and payloads keep their exact
 * values (a bigint id is echoed digit for digit) and so the main thread can splice in a
 * stored document without parsing it.
 */
import { dumpCompact } from "../../../verifier/json/dump.js";
import {
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../../../verifier/json/value.js";
import { resultTooLarge } from "../../verification/outcome.js";
import { JSON_RPC_ERRORS } from "./protocol.js";

/** MCP ids are strings or integers, never null; integers may exceed 2^53. */
export type RequestId = string | number | bigint;

export type Message =
  | { kind: "request"; id: RequestId; method: string; params: JsonValue | undefined }
  | { kind: "notification"; method: string }
  /** A client's answer to a server request. A stateless server sends none, so it is ignored. */
  | { kind: "response" }
  | { kind: "invalid"; id: RequestId | null; reason: string };

function isRequestId(value: JsonValue | undefined): value is RequestId {
  // Integers in the value model are numbers or bigints; a fraction or exponent is a PyFloat.
  return typeof value === "string" || typeof value === "number" || typeof value === "bigint";
}

export function classifyMessage(value: JsonValue): Message {
  if (!isObject(value)) {
    return { kind: "invalid", id: null, reason: "a JSON-RPC message must be an object" };
  }
  const idValue = value.get("id");
  const id = isRequestId(idValue) ? idValue : null;
  const invalid = (reason: string): Message => ({ kind: "invalid", id, reason });
  if (value.get("jsonrpc") !== "2.0") return invalid('jsonrpc must be "2.0"');
  if (!value.has("method")) {
    const answers = Number(value.has("result")) + Number(value.has("error"));
    if (value.has("id") && answers === 1) return { kind: "response" };
    return invalid("a message needs a method (or, as a response, an id and a result or error)");
  }
  const method = value.get("method");
  if (typeof method !== "string") return invalid("method must be a string");
  const params = value.get("params");
  if (params !== undefined && !isObject(params) && !isArray(params)) {
    return invalid("params must be an object or an array");
  }
  if (!value.has("id")) return { kind: "notification", method };
  if (id === null) return invalid("id must be a string or an integer");
  return { kind: "request", id, method, params };
}

/** The members a method gets: `params` must be by-name (an object) or absent. */
export function namedParams(params: JsonValue | undefined): JsonObject | null {
  if (params === undefined) return new Map();
  return isObject(params) ? params : null;
}

export function idJson(id: RequestId | null): string {
  return dumpCompact(id);
}

export function resultResponse(id: string, resultJson: string): string {
  return `{"jsonrpc":"2.0","id":${id},"result":${resultJson}}`;
}

export function errorResponse(
  id: RequestId | null,
  code: number,
  message: string,
  data?: object,
): string {
  const error = data === undefined ? { code, message } : { code, message, data };
  return `{"jsonrpc":"2.0","id":${idJson(id)},"error":${dumpCompact(error)}}`;
}

/**
 * A `tools/call` result (service.md §7): the payload as text content and, the same JSON, as
 * structured content.
 */
export function toolResult(payloadJson: string, isError: boolean): string {
  return (
    `{"content":[{"type":"text","text":${dumpCompact(payloadJson)}}],` +
    `"structuredContent":${payloadJson},"isError":${isError}}`
  );
}

/**
 * The refusal of a body whose verdicts would pass the result budget, as `POST /verify` refuses
 * it but inside a JSON-RPC error: -32600 with `data` `{error: "result_too_large", limit}`.
 * `id` is JSON text: the single request's id, or `null` for a batch.
 */
export function resultTooLargeResponse(id: string, limit: number): string {
  const error = {
    code: JSON_RPC_ERRORS.invalidRequest,
    message: `Invalid Request: the verdicts would hold more than ${limit} bytes of errors and reasons`,
    data: resultTooLarge(limit),
  };
  return `{"jsonrpc":"2.0","id":${id},"error":${dumpCompact(error)}}`;
}
