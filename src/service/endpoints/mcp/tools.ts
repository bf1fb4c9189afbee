/**
 * The MCP tools (service.md §7), defined once: `tools/list`, the server card and argument
 * validation all read these definitions.
 */
import { Ajv, type ErrorObject } from "ajv";
import { type JsonObject, toPlain } from "../../../verifier/json/value.js";
import { anchorResultSchema } from "../../schemas/anchor.js";
import { errorResponseSchema } from "../../schemas/errors.js";
import { notarizationAnswerSchema, notarizationRequestSchema } from "../../schemas/notarization.js";
import { revocationDocumentSchema } from "../../schemas/revocation-document.js";
import { verdictPayloadSchema } from "../../schemas/verdict.js";

export type ToolName = "verify_bundle" | "verify_anchor" | "get_revocations" | "notarize";

export interface ToolDefinition {
  name: ToolName;
  title: string;
  description: string;
  inputSchema: {
    type: "object";
    description?: string;
    properties: Record<string, object>;
    required: readonly string[];
    additionalProperties: false;
  };
  /**
   * What `structuredContent` holds, in success and in failure (`isError`), so that clients
   * can validate it: the response schemas of the tool's HTTP endpoint, the same objects.
   */
  outputSchema: { type: "object"; [keyword: string]: unknown };
  /** Derived from the tool's row in `TOOL_BEHAVIOURS`, never written by hand. */
  annotations: ToolAnnotations;
}

/** MCP's tool annotations (2025-06-18), all of them stated: the spec's defaults are unsafe. */
export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * What a tool does to the service's state, which alone decides its hints:
 * - `reads`: answers from its arguments and the stores, and changes nothing;
 * - `writes`: stores a new record on every call and never changes or removes one (a repeated
 *   call stores another, with its own `issued_at`).
 */
export type ToolBehaviour = "reads" | "writes";

/**
 * The hints each behaviour means, decided here once. No tool reaches outside the service
 * (`openWorldHint: false`): they act on their arguments and the service's own stores; even
 * `verify_anchor` checks the block headers it is given and asks no chain.
 */
export const BEHAVIOUR_HINTS: Readonly<
  Record<ToolBehaviour, Readonly<Omit<ToolAnnotations, "title">>>
> = {
  reads: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  // Adds, never overwrites: not destructive; but a repeat is a new record, so not idempotent.
  writes: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
};

/** Each tool's behaviour: a new tool cannot be listed without a row here. */
export const TOOL_BEHAVIOURS: Readonly<Record<ToolName, ToolBehaviour>> = {
  verify_bundle: "reads",
  verify_anchor: "reads",
  get_revocations: "reads",
  notarize: "writes",
};

function withAnnotations(tool: Omit<ToolDefinition, "annotations">): ToolDefinition {
  return {
    ...tool,
    annotations: { title: tool.title, ...BEHAVIOUR_HINTS[TOOL_BEHAVIOURS[tool.name]] },
  };
}

/**
 * An output schema for a tool that answers like its endpoint: the endpoint's success body or
 * its error body (`{error, detail?}`), which tool failures carry.
 */
function bodyOrError(description: string, body: object): ToolDefinition["outputSchema"] {
  return { type: "object", description, anyOf: [body, errorResponseSchema] };
}

/*
 * Argument schemas check types only (`-32602` when they fail), except `notarize`'s (see
 * `LIBRARY_JUDGED`). Finer rules (digest and header forms, issuer form) are
 * the endpoints' own, so a tool answers exactly what its HTTP endpoint answers.
 */
const TOOL_SPECS: readonly Omit<ToolDefinition, "annotations">[] = [
  {
    name: "verify_bundle",
    title: "Verify a Continuity Receipt bundle",
    description:
      "Verifies one Continuity Receipt bundle (spec 0.1–0.6) exactly as POST /verify does and " +
      "returns its verdict payload: verdict (TRUSTED, PROVISIONAL, INSUFFICIENT_EVIDENCE or " +
      "UNTRUSTED), errors [{code, detail, receipt_id}], provisional_reasons, " +
      "insufficient_reasons, summary and service. A bad bundle is a verdict, not a tool error.",
    inputSchema: {
      type: "object",
      properties: {
        bundle: { type: "object", description: "the bundle, as its JSON object" },
        require_anchor: {
          type: "boolean",
          description: "missing anchors make the verdict PROVISIONAL (anchor_missing)",
        },
        receipt: {
          type: "boolean",
          description:
            "add a verification_receipt signed by the service (or verification_receipt_error)",
        },
        cache: {
          type: "boolean",
          description:
            "the opt-in digest cache of POST /verify?cache=1 (900 s, 256 entries; ignored in a " +
            "JSON-RPC batch): the payload then has cache {hit, cached_at, age_s?}",
        },
      },
      required: ["bundle"],
      additionalProperties: false,
    },
    // A bad bundle is a verdict and bad arguments are -32602: this tool has no failures.
    outputSchema: verdictPayloadSchema,
  },
  {
    name: "verify_anchor",
    title: "Verify an OpenTimestamps anchor proof",
    description:
      "Checks a detached OpenTimestamps proof against a SHA-256 digest exactly as " +
      "POST /verify-anchor does and returns {status, code, detail, file_digest, attestations, " +
      "confirmed?}. Bitcoin attestations are confirmed only by merkle-root equality with the " +
      "block headers supplied (no proof-of-work, no chain). Malformed input is a tool error.",
    inputSchema: {
      type: "object",
      properties: {
        proof: { type: "string", description: "the .ots file, standard base64" },
        digest: { type: "string", description: "sha256:<64 hex> or <64 hex>" },
        headers: {
          type: "object",
          description: "80-byte block headers (160 hex characters) by block height",
          additionalProperties: { type: "string" },
        },
      },
      required: ["proof", "digest"],
      additionalProperties: false,
    },
    outputSchema: bodyOrError(
      "POST /verify-anchor's 200 body (an AnchorResult with `service`), or its 400 body",
      anchorResultSchema,
    ),
  },
  {
    name: "get_revocations",
    title: "Get an issuer's revocation document",
    description:
      "Returns the revocation document the service holds for an issuer, as " +
      "GET /revocations/{issuer} serves it: {kind, version, issued_at?, statements} with " +
      "self-signed statements, each checked before it is served. No document is a tool error.",
    inputSchema: {
      type: "object",
      properties: {
        issuer: { type: "string", description: "the issuer's Ed25519 did:key (did:key:z6Mk…)" },
      },
      required: ["issuer"],
      additionalProperties: false,
    },
    outputSchema: bodyOrError(
      "GET /revocations/{issuer}'s 200 body (the stored document), or its error body",
      revocationDocumentSchema,
    ),
  },
  {
    name: "notarize",
    title: "Notarize context digests",
    description:
      "Signs a wm.context-notarization statement (version 1) over the digests and bounded " +
      "claims given, exactly as POST /notarize does, and stores it under its digest: " +
      "{notarized: true, digest, receipt: <the signed statement>, service, lookup_url}. " +
      "The service never sees the context behind the digests. Each call stores a new " +
      "statement. A refused request is a tool error with POST /notarize's code; " +
      "store_unavailable means retry.",
    inputSchema: notarizationRequestSchema,
    outputSchema: bodyOrError(
      "POST /notarize's 200 body, or its error body (`fields` lists unsupported members)",
      notarizationAnswerSchema,
    ),
  },
];

export const TOOLS: readonly ToolDefinition[] = TOOL_SPECS.map(withAnnotations);

export function findTool(name: string): ToolDefinition | undefined {
  return TOOLS.find((tool) => tool.name === name);
}

const ajv = new Ajv({ allErrors: false, strict: false });

/** The first schema violation of a JSON-RPC `params` or tool `arguments`; null when none. */
export type ParamsValidator = (value: JsonObject) => string | null;

function describe(error: ErrorObject, subject: string): string {
  const where = `${subject}${error.instancePath}`;
  if (error.keyword === "additionalProperties") {
    return `${where} has an unexpected member '${String(error.params.additionalProperty)}'`;
  }
  return `${where} ${error.message ?? "is invalid"}`;
}

export function paramsValidator(schema: object, subject: string): ParamsValidator {
  const validate = ajv.compile(schema);
  return (value) => {
    if (validate(toPlain(value))) return null;
    const [first] = validate.errors ?? [];
    return first === undefined ? `${subject} are invalid` : describe(first, subject);
  };
}

/**
 * Tools whose arguments only their library judges: the declared schema describes the request
 * (for clients), and every refusal, unknown members and wrong types included, is the library's
 * tool error with the code POST /notarize answers, never a `-32602` that HTTP does not have.
 */
const LIBRARY_JUDGED: ReadonlySet<ToolName> = new Set<ToolName>(["notarize"]);

const argumentValidators = new Map(
  TOOLS.map((tool) => [
    tool.name,
    LIBRARY_JUDGED.has(tool.name) ? () => null : paramsValidator(tool.inputSchema, "arguments"),
  ]),
);

/** The first way `args` fails `tool`'s input schema; null when they conform. */
export function argumentProblem(tool: ToolDefinition, args: JsonObject): string | null {
  return argumentValidators.get(tool.name)!(args);
}
