/**
 * `POST /mcp` from raw body bytes to JSON-RPC responses (service.md §7, protocols.md §3). It
 * runs on a worker thread (`worker.ts`): the body is parsed strictly, once, there — bundles
 * carry exact big integers and duplicate-member rules that `JSON.parse` would break, and
 * `verify_bundle` must give `POST /verify`'s verdicts. The server is stateless: nothing is
 * remembered between requests, so `initialize` is optional and every method is served as is.
 *
 * HTTP status of the reply: 200 when it holds any response (including JSON-RPC errors about a
 * valid request, such as -32601 and -32602); 202 with no body when the body held only
 * notifications or responses; 400 when the body as a whole cannot be taken (-32700, a single
 * invalid message -32600, a refused batch, an unsupported `MCP-Protocol-Version`, and a
 * request whose verdicts would pass the result budget: -32600 with `data.error`
 * `result_too_large` and `data.limit`, as `POST /verify` refuses it).
 */

import {
  type IssuedNotarization,
  issueNotarization,
  NotarizationError,
  notarizationAnswer,
  parseNotarizationRequest,
} from "../../../notarization/index.js";
import { ResultBudget, ResultBudgetExceeded } from "../../../verifier/bundle/budget.js";
import type { Ed25519Signer } from "../../../verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../verifier/json/dump.js";
import { parseJson, StrictJsonError } from "../../../verifier/json/parse.js";
import {
  isArray,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../../../verifier/json/value.js";
import { countVerificationCost, MAX_UNITS_PER_REQUEST } from "../../cost.js";
import { type Answer, errorAnswerOf } from "../../errors.js";
import { SERVICE_NAME } from "../../service-name.js";
import { answerVerifyAnchor } from "../../verification/anchor-answer.js";
import { chargeableUnits, singleBundlePayload } from "../../verification/answer.js";
import type { VerdictTally } from "../../verification/outcome.js";
import {
  classifyMessage,
  errorResponse,
  idJson,
  type Message,
  namedParams,
  type RequestId,
  resultResponse,
  resultTooLargeResponse,
  toolResult,
} from "./json-rpc.js";
import {
  BATCHING_PROTOCOL_VERSION,
  HEADERLESS_PROTOCOL_VERSION,
  isSupportedProtocolVersion,
  JSON_RPC_ERRORS,
  LATEST_PROTOCOL_VERSION,
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INSTRUCTIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "./protocol.js";
import { argumentProblem, findTool, paramsValidator, TOOLS, type ToolName } from "./tools.js";

export interface McpTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  /** The `MCP-Protocol-Version` header; null when absent. */
  protocolVersion: string | null;
  /** Whether the request's credentials allow keyed work, which `tools/call` is. */
  keyedAccess: boolean;
  /**
   * The cap units the main thread authorised: the `verify_bundle` calls of a body whose
   * estimate needs more are refused before their signatures are checked (`cost.ts`).
   */
  authorisedUnits?: number;
}

/** `get_revocations` after its arguments passed: the store is read on the main thread. */
export interface RevocationsLookup {
  /** The request id as JSON text, for the response. */
  id: string;
  issuer: string;
}

/**
 * `verify_bundle` with `cache: true` after its arguments passed: the digest cache is read on
 * the main thread, and a miss is verified there as `POST /verify?cache=1` verifies it.
 */
export interface BundleVerificationLookup {
  /** The request id as JSON text, for the response. */
  id: string;
  /** `{"bundle": <the bundle>}` as compact JSON text: a `POST /verify` body of form 2. */
  body: string;
  requireAnchor: boolean;
  receipt: boolean;
}

/**
 * `notarize` after the worker signed the statement: storing it is I/O, done on the main
 * thread, which then answers with `result` (or a tool error when the store cannot be reached).
 */
export interface NotarizationStorage {
  /** The request id as JSON text, for the response. */
  id: string;
  issued: IssuedNotarization;
  /** The tool result of a stored statement, as JSON text. */
  result: string;
}

/**
 * One response of the reply. `workDone`: a tool result its HTTP endpoint would answer with a
 * charged status (a verdict, an anchor's result); tool errors and JSON-RPC errors never are.
 */
export type McpReplyPart =
  | { json: string; workDone?: true }
  | { revocations: RevocationsLookup }
  | { verification: BundleVerificationLookup }
  | { notarization: NotarizationStorage };

export type McpAnswer =
  /** A `tools/call` without keyed access: the caller answers with the access decision. */
  | { kind: "denied" }
  /** The body's `verify_bundle` calls would cost more than authorised: an HTTP refusal. */
  | { kind: "refusal"; answer: Answer }
  /** Only notifications or responses: 202, no body. */
  | { kind: "accepted" }
  | {
      kind: "reply";
      statusCode: 200 | 400;
      /** Whether the parts form an array (a 2025-03-26 batch) or a single response. */
      batch: boolean;
      parts: McpReplyPart[];
      /**
       * The keyed work done (a `tools/call`), null when none: a presented payment is then
       * settled, and its receipt names this call.
       */
      toolCall: ToolCall | null;
      /** A refusal after real work (`result_too_large`): charged like a result (issue 22). */
      charged?: true;
      /** The verdicts of the `verify_bundle` calls answered here, for `/metrics`. */
      verdicts?: VerdictTally;
      /** The cap units the body's `verify_bundle` calls are charged (`cost.ts`), if any. */
      units?: number;
    };

/** What a settlement receipt records of a paid `tools/call` (settlement-receipt.ts). */
export interface ToolCall {
  rpc: "tools/call";
  /** The tool, when every call of the body names the same known tool; else null. */
  tool: ToolName | null;
}

export interface McpRequestContext {
  /** Messages in one batch; the same bound as bundles in a `POST /verify` batch. */
  maxBatch: number;
  /**
   * Bytes of errors and reasons the `verify_bundle` verdicts of one request (a message or a
   * whole batch) may hold; the same bound as for one `POST /verify` request.
   */
  maxResultBytes: number;
  /** The current service key, for `verify_bundle`'s receipts. */
  signer(): Ed25519Signer;
}

/** What the messages of one body share while they are answered. */
interface BodyState {
  /** One budget for the whole body: a batch of calls is bounded as a `POST /verify` batch. */
  budget: ResultBudget;
  /** Whether the body is a JSON-RPC batch. */
  batch: boolean;
  verdicts: VerdictTally;
}

const validateInitializeParams = paramsValidator(
  {
    type: "object",
    required: ["protocolVersion", "capabilities", "clientInfo"],
    properties: {
      protocolVersion: { type: "string" },
      capabilities: { type: "object" },
      clientInfo: {
        type: "object",
        required: ["name", "version"],
        properties: { name: { type: "string" }, version: { type: "string" } },
      },
    },
  },
  "params",
);

const validateListParams = paramsValidator(
  { type: "object", properties: { cursor: { type: "string" }, _meta: { type: "object" } } },
  "params",
);

const validateCallParams = paramsValidator(
  {
    type: "object",
    required: ["name"],
    properties: {
      name: { type: "string" },
      arguments: { type: "object" },
      _meta: { type: "object" },
    },
  },
  "params",
);

/** The bundles of the body's `verify_bundle` calls, for the cost estimate. */
function bundlesToVerify(messages: readonly Message[]): JsonValue[] {
  const bundles: JsonValue[] = [];
  for (const message of messages) {
    if (message.kind !== "request" || message.method !== "tools/call") continue;
    const params = message.params;
    if (!isObject(params) || params.get("name") !== "verify_bundle") continue;
    const args = params.get("arguments");
    const bundle = isObject(args) ? args.get("bundle") : undefined;
    if (bundle !== undefined) bundles.push(bundle);
  }
  return bundles;
}

function refused(
  code: number,
  message: string,
  data?: object,
  id: RequestId | null = null,
): McpAnswer {
  return {
    kind: "reply",
    statusCode: 400,
    batch: false,
    toolCall: null,
    parts: [{ json: errorResponse(id, code, message, data) }],
  };
}

function invalidParams(id: RequestId, detail: string): McpReplyPart {
  return { json: errorResponse(id, JSON_RPC_ERRORS.invalidParams, `Invalid params: ${detail}`) };
}

function result(id: RequestId, value: object): McpReplyPart {
  return { json: resultResponse(idJson(id), dumpCompact(value)) };
}

function initialize(id: RequestId, params: JsonObject, inBatch: boolean): McpReplyPart {
  if (inBatch) {
    return {
      json: errorResponse(
        id,
        JSON_RPC_ERRORS.invalidRequest,
        "Invalid Request: initialize must not be part of a batch",
      ),
    };
  }
  const problem = validateInitializeParams(params);
  if (problem !== null) return invalidParams(id, problem);
  const requested = params.get("protocolVersion") as string;
  return result(id, {
    protocolVersion: isSupportedProtocolVersion(requested) ? requested : LATEST_PROTOCOL_VERSION,
    capabilities: SERVER_CAPABILITIES,
    serverInfo: SERVER_INFO,
    instructions: SERVER_INSTRUCTIONS,
  });
}

function listTools(id: RequestId, params: JsonObject): McpReplyPart {
  const problem = validateListParams(params);
  if (problem !== null) return invalidParams(id, problem);
  // One page holds every tool, so no cursor was ever handed out.
  if (params.has("cursor")) return invalidParams(id, "unknown cursor");
  return result(id, { tools: TOOLS });
}

function callTool(
  id: RequestId,
  params: JsonObject,
  context: McpRequestContext,
  state: BodyState,
): McpReplyPart {
  const problem = validateCallParams(params);
  if (problem !== null) return invalidParams(id, problem);
  const name = params.get("name") as string;
  const tool = findTool(name);
  if (tool === undefined) return invalidParams(id, `unknown tool '${name}'`);
  const args = (params.get("arguments") ?? new Map()) as JsonObject;
  const argumentsProblem = argumentProblem(tool, args);
  if (argumentsProblem !== null) return invalidParams(id, argumentsProblem);
  switch (tool.name) {
    case "verify_bundle": {
      const flags = {
        requireAnchor: args.get("require_anchor") === true,
        receipt: args.get("receipt") === true,
      };
      const bundle = args.get("bundle") as JsonObject;
      // As `POST /verify?cache=1` ignores the cache for a batch, so does a JSON-RPC batch: a
      // call verified later, on its own, would escape the body's one result budget.
      if (args.get("cache") === true && !state.batch) {
        const body = `{"bundle":${dumpCompact(bundle)}}`;
        return { verification: { id: idJson(id), body, ...flags } };
      }
      const payload = singleBundlePayload(bundle, flags, context.signer(), state.budget);
      state.verdicts[payload.verdict] = (state.verdicts[payload.verdict] ?? 0) + 1;
      const json = resultResponse(idJson(id), toolResult(dumpCompact(payload), false));
      return { json, workDone: true };
    }
    case "verify_anchor": {
      // As `POST /verify-anchor` answers: a result names the service, a refusal does not.
      const answer = answerVerifyAnchor(args);
      const failed = answer.statusCode !== 200;
      const payload = failed ? answer.payload : { ...answer.payload, service: SERVICE_NAME };
      const json = resultResponse(idJson(id), toolResult(dumpCompact(payload), failed));
      // A proof's answer lists every leaf (twice: as text and as structured content), so a
      // batch of them is charged to the body's result budget as a batch of verdicts is
      // (issue 22, finding 9): the whole response, as it will be sent.
      state.budget.chargeText(Buffer.byteLength(json));
      return failed ? { json } : { json, workDone: true };
    }
    case "get_revocations":
      return { revocations: { id: idJson(id), issuer: args.get("issuer") as string } };
    case "notarize":
      return notarize(id, args, context);
  }
}

/**
 * Validates and signs on the worker, with the service key; the library judges the arguments,
 * so a refusal is a tool error carrying `POST /notarize`'s code, `detail` and `fields`.
 */
function notarize(id: RequestId, args: JsonObject, context: McpRequestContext): McpReplyPart {
  let issued: IssuedNotarization;
  try {
    issued = issueNotarization(parseNotarizationRequest(args), context.signer());
  } catch (error) {
    if (!(error instanceof NotarizationError)) throw error;
    const refusal = {
      error: error.code,
      detail: error.detail,
      ...(error.fields === undefined ? {} : { fields: error.fields }),
    };
    return { json: resultResponse(idJson(id), toolResult(dumpCompact(refusal), true)) };
  }
  const answer = dumpCompact(notarizationAnswer(issued, SERVICE_NAME));
  return { notarization: { id: idJson(id), issued, result: toolResult(answer, false) } };
}

/**
 * The `tools/call` a body holds, null when none. A batch of calls to different tools, or a
 * call naming no known tool, records the method only: a receipt names one tool, and never a
 * name the client made up.
 */
function toolCallOf(messages: readonly Message[]): ToolCall | null {
  const tools = new Set<ToolName | null>();
  for (const message of messages) {
    if (message.kind !== "request" || message.method !== "tools/call") continue;
    const name = namedParams(message.params)?.get("name");
    tools.add(typeof name === "string" ? (findTool(name)?.name ?? null) : null);
  }
  if (tools.size === 0) return null;
  const [only] = tools;
  return { rpc: "tools/call", tool: tools.size === 1 ? (only ?? null) : null };
}

function answerMessage(
  message: Message,
  context: McpRequestContext,
  state: BodyState,
): McpReplyPart | null {
  if (message.kind === "invalid") {
    return {
      json: errorResponse(
        message.id,
        JSON_RPC_ERRORS.invalidRequest,
        `Invalid Request: ${message.reason}`,
      ),
    };
  }
  // Notifications (`notifications/initialized`, cancellations, …) ask for nothing back.
  if (message.kind !== "request") return null;
  const { id, method } = message;
  const knownMethod = ["initialize", "ping", "tools/list", "tools/call"].includes(method);
  if (!knownMethod) {
    return {
      json: errorResponse(id, JSON_RPC_ERRORS.methodNotFound, `Method not found: ${method}`),
    };
  }
  const params = namedParams(message.params);
  if (params === null) return invalidParams(id, "params must be an object");
  switch (method) {
    case "initialize":
      return initialize(id, params, state.batch);
    case "ping":
      return result(id, {});
    case "tools/list":
      return listTools(id, params);
    default:
      return callTool(id, params, context, state);
  }
}

export function answerMcpRequest(
  bytes: Uint8Array,
  task: Omit<McpTask, "body">,
  context: McpRequestContext,
): McpAnswer {
  let body: JsonValue;
  try {
    body = parseJson(bytes);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    return refused(JSON_RPC_ERRORS.parseError, "Parse error", { detail: error.message });
  }
  const batch = isArray(body);
  // `initialize` negotiates the version in its params; a header on it is not binding.
  const initializing = !batch && isObject(body) && body.get("method") === "initialize";
  if (
    !initializing &&
    task.protocolVersion !== null &&
    !isSupportedProtocolVersion(task.protocolVersion)
  ) {
    return refused(
      JSON_RPC_ERRORS.transportRefusal,
      `Bad Request: unsupported MCP-Protocol-Version ${task.protocolVersion}`,
      { supported: SUPPORTED_PROTOCOL_VERSIONS, requested: task.protocolVersion },
    );
  }
  const values = isArray(body) ? body : [body];
  if (batch) {
    const version = task.protocolVersion ?? HEADERLESS_PROTOCOL_VERSION;
    if (version !== BATCHING_PROTOCOL_VERSION) {
      return refused(
        JSON_RPC_ERRORS.invalidRequest,
        `Invalid Request: protocol version ${version} has no JSON-RPC batches`,
      );
    }
    if (values.length === 0) {
      return refused(JSON_RPC_ERRORS.invalidRequest, "Invalid Request: empty batch");
    }
    if (values.length > context.maxBatch) {
      return refused(
        JSON_RPC_ERRORS.invalidRequest,
        `Invalid Request: a batch holds at most ${context.maxBatch} messages`,
      );
    }
  }
  const messages = values.map(classifyMessage);
  const toolCall = toolCallOf(messages);
  if (toolCall !== null && !task.keyedAccess) return { kind: "denied" };
  const bundles = bundlesToVerify(messages);
  let units: { units?: number } = {};
  try {
    if (bundles.length > 0) {
      const counts = countVerificationCost(bundles, bytes.byteLength);
      units = { units: chargeableUnits(counts, task.authorisedUnits ?? MAX_UNITS_PER_REQUEST) };
    }
  } catch (error) {
    return { kind: "refusal", answer: errorAnswerOf(error) };
  }
  const state: BodyState = {
    budget: new ResultBudget(context.maxResultBytes),
    batch,
    verdicts: {},
  };
  let parts: McpReplyPart[];
  try {
    parts = messages.flatMap((message) => answerMessage(message, context, state) ?? []);
  } catch (error) {
    if (!(error instanceof ResultBudgetExceeded)) throw error;
    const single = !batch && messages[0]?.kind === "request" ? messages[0].id : null;
    return {
      kind: "reply",
      statusCode: 400,
      batch: false,
      // The tool calls ran until the budget stopped them: work done, charged and settled.
      parts: [{ json: resultTooLargeResponse(idJson(single), error.limit) }],
      toolCall,
      charged: true,
      ...units,
    };
  }
  if (parts.length === 0) return { kind: "accepted" };
  const statusCode = !batch && messages[0]?.kind === "invalid" ? 400 : 200;
  const reply: McpAnswer = { kind: "reply", statusCode, batch, parts, toolCall, ...units };
  return Object.keys(state.verdicts).length === 0 ? reply : { ...reply, verdicts: state.verdicts };
}
