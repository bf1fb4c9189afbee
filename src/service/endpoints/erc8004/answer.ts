/**
 * `POST /erc8004/validate` from raw body bytes to response text (service.md §5). It runs on a
 * worker thread (`worker.ts`): the body is parsed strictly once, there; the bundle is
 * verified with the library, the request's task_hash is bound to it, and the outcome is
 * signed as an EIP-712 `ValidationResponse` with the validator key.
 *
 * Decisions where service.md is silent (docs/service-decisions.md, "ERC-8004 validation"):
 * - the body's members are checked one by one in the documented order, each failure with its
 *   own code (`missing_<member>`, `bad_<member>`, `bad_registry_checksum`); a body that is not
 *   an object or has an unknown member (a misspelt `chainId` would silently sign for Base)
 *   is `bad_shape`;
 * - a bundle without canonical bytes (a float or a lone surrogate anywhere) has no
 *   `receiptHash`: `422 bundle_not_canonicalizable`, before any verification;
 * - a task_hash that binds to nothing is `422 task_hash_unbound` with the whole evaluation,
 *   but `attestation` is null: the service does not sign for a request its bundle does not
 *   answer. The evaluation is work delivered, so the refusal is charged and settled like a
 *   200 (`CHARGED_REFUSALS`, issue 22): otherwise one x402 authorization bought any number;
 * - `binding` names the rule that bound the task_hash (or null), after `checks`;
 * - the evaluation carries the whole verdict, so it has `POST /verify`'s result budget:
 *   `400 result_too_large` when its errors and reasons would pass `maxResultBytes`.
 */
import type { Address, Hex } from "viem";
import { type Attestation, signAttestation } from "../../../erc8004/attestation.js";
import { type BindingRule, bindTaskHash, hash32 } from "../../../erc8004/binding.js";
import { type ValidationChecks, validationChecks } from "../../../erc8004/checks.js";
import { outcomeFor } from "../../../erc8004/outcome.js";
import {
  DEFAULT_CHAIN_ID,
  DEFAULT_VALIDATION_REGISTRY,
  MAX_CHAIN_ID,
  readAddress,
} from "../../../erc8004/registry.js";
import type { ValidatorKey } from "../../../erc8004/validator-key.js";
import { bodyValidator } from "../../../validation/body-validator.js";
import type { VerifyResult } from "../../../verifier/bundle/result.js";
import { sha256Hex } from "../../../verifier/crypto/digest.js";
import { CanonicalizationError, canonicalBytes } from "../../../verifier/json/canonical.js";
import {
  isObject,
  type JsonObject,
  type JsonValue,
  PyFloat,
} from "../../../verifier/json/value.js";
import { countBundleCost, MAX_UNITS_PER_REQUEST } from "../../cost.js";
import {
  type Answer,
  answer,
  answerOrRefusalAsync,
  errorAnswer,
  parseRequestJson,
  ServiceError,
} from "../../errors.js";
import { SERVICE_NAME } from "../../service-name.js";
import { chargeableUnits, verifyWithinBudget } from "../../verification/answer.js";
import { memberSchemas } from "./contract.js";

export interface Erc8004Task {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  /** The cap units the main thread authorised (`cost.ts`); absent: the per-request limit. */
  authorisedUnits?: number;
}

export interface Erc8004RequestContext {
  /** The validator key (loaded once per thread, on first use). */
  validator(): ValidatorKey;
  /** Milliseconds since the epoch: the attestation's timestamp. */
  now(): number;
  /** Bytes of errors and reasons the verdict may hold. */
  maxResultBytes: number;
}

type MemberName = keyof typeof memberSchemas;
type RequiredMember = "request_id" | "task_hash" | "bundle";
const MEMBERS = Object.keys(memberSchemas) as MemberName[];
const REQUIRED: readonly RequiredMember[] = ["request_id", "task_hash", "bundle"];

function isRequired(name: MemberName): name is RequiredMember {
  return (REQUIRED as readonly MemberName[]).includes(name);
}

/** One validator per member, so a failure names its member and gets that member's code. */
const memberValidators = new Map(
  MEMBERS.map((name) => [
    name,
    bodyValidator({ type: "object", properties: { [name]: memberSchemas[name] } }),
  ]),
);

interface ValidateRequest {
  requestId: Hex;
  taskHash: Buffer;
  bundle: JsonObject;
  registry: Address;
  chainId: number;
}

/** Integer checks ajv cannot make on the value model: floats (`8453.0`) and bigints. */
function chainIdProblem(value: JsonValue): string | null {
  if (value instanceof PyFloat) return "body/chain_id must be integer";
  if (typeof value === "bigint") {
    return value < 0n ? "body/chain_id must be >= 1" : `body/chain_id must be <= ${MAX_CHAIN_ID}`;
  }
  return null;
}

function checkMember(body: JsonObject, name: MemberName): void {
  const value = body.get(name);
  if (value === undefined) {
    if (isRequired(name)) {
      // The codes are built from member names, and typed: each must be in ERROR_STATUS.
      throw new ServiceError(`missing_${name}`, {
        detail: `body must have required property '${name}'`,
      });
    }
    return;
  }
  const problem =
    (name === "chain_id" ? chainIdProblem(value) : null) ??
    memberValidators.get(name)!(new Map([[name, value]]));
  if (problem !== null) throw new ServiceError(`bad_${name}`, { detail: problem });
}

function readRequest(body: JsonValue): ValidateRequest {
  if (!isObject(body)) throw new ServiceError("bad_shape", { detail: "body must be an object" });
  for (const name of body.keys()) {
    if (!(MEMBERS as string[]).includes(name)) {
      throw new ServiceError("bad_shape", { detail: `body has an unexpected member '${name}'` });
    }
  }
  for (const name of MEMBERS) checkMember(body, name);

  const registryText = body.get("registry_address");
  const registry =
    typeof registryText === "string"
      ? readAddress(registryText)
      : { ok: true as const, address: DEFAULT_VALIDATION_REGISTRY };
  if (!registry.ok) {
    throw new ServiceError("bad_registry_checksum", {
      detail: "body/registry_address is mixed-case but not its EIP-55 checksum spelling",
    });
  }
  const chainId = body.get("chain_id");
  return {
    requestId: (body.get("request_id") as string).toLowerCase() as Hex,
    taskHash: hash32(body.get("task_hash") as string)!,
    bundle: body.get("bundle") as JsonObject,
    registry: registry.address,
    chainId: typeof chainId === "number" ? chainId : DEFAULT_CHAIN_ID,
  };
}

interface Evaluation {
  request_id: Hex;
  outcome: number;
  outcome_label: string;
  verdict: VerifyResult["verdict"];
  checks: ValidationChecks;
  binding: BindingRule | null;
  verification: VerifyResult & { service: string };
}

export async function answerValidateRequest(
  bytes: Uint8Array,
  context: Erc8004RequestContext,
  authorisedUnits: number = MAX_UNITS_PER_REQUEST,
): Promise<Answer> {
  return answerOrRefusalAsync(async () => {
    const request = readRequest(parseRequestJson(bytes));
    // Counted before any signature: an evaluation is charged by its bundle's cost.
    const units = chargeableUnits(
      countBundleCost(request.bundle, bytes.byteLength),
      authorisedUnits,
    );
    return { ...(await validate(request, context)), units };
  });
}

async function validate(request: ValidateRequest, context: Erc8004RequestContext) {
  let bundleHash: string;
  try {
    bundleHash = sha256Hex(canonicalBytes(request.bundle));
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    throw new ServiceError("bundle_not_canonicalizable", {
      detail: `the bundle has no canonical (JCS) bytes, so no receiptHash: ${error.message}`,
    });
  }

  const result = verifyWithinBudget(
    request.bundle,
    { requireAnchor: false },
    context.maxResultBytes,
  );
  const binding = bindTaskHash(request.bundle, request.taskHash);
  const { outcome, label } = outcomeFor(result.verdict);
  const evaluation: Evaluation = {
    request_id: request.requestId,
    outcome,
    outcome_label: label,
    verdict: result.verdict,
    checks: validationChecks(result, binding !== null),
    binding,
    verification: { ...result, service: SERVICE_NAME },
  };
  const validator = context.validator();
  const tail = { validator_address: validator.address, service: SERVICE_NAME };
  if (binding === null) {
    return errorAnswer("task_hash_unbound", { ...evaluation, attestation: null, ...tail });
  }
  const attestation: Attestation = await signAttestation(validator, {
    chainId: request.chainId,
    verifyingContract: request.registry,
    message: {
      requestId: request.requestId,
      outcome,
      receiptHash: `0x${bundleHash}`,
      timestamp: Math.floor(context.now() / 1000),
    },
  });
  return answer(200, { ...evaluation, attestation, ...tail });
}
