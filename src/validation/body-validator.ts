/**
 * JSON Schema checks over the strict value model. Request bodies are parsed strictly on a
 * worker thread (service.md §0), so Fastify never sees them as objects and cannot validate
 * them. The route's `body` schema is still the one source of truth: the OpenAPI document is
 * generated from it, and the worker validates the strictly parsed value against the same
 * schema object with this validator. Settlements read from the queue (src/payments) are
 * checked the same way, which is why this sits below the service layer.
 */
import { Ajv, type ErrorObject } from "ajv";
import { type JsonValue, toPlain } from "../verifier/json/value.js";

const ajv = new Ajv({ allErrors: false, strict: false });

/** The first schema violation, in words a client can act on; null when the body conforms. */
export type BodyValidator = (body: JsonValue) => string | null;

function describe(error: ErrorObject): string {
  const where = error.instancePath === "" ? "body" : `body${error.instancePath}`;
  if (error.keyword === "additionalProperties") {
    return `${where} has an unexpected member '${String(error.params.additionalProperty)}'`;
  }
  return `${where} ${error.message ?? "is invalid"}`;
}

export function bodyValidator(schema: object): BodyValidator {
  const validate = ajv.compile(schema);
  return (body) => {
    if (validate(toPlain(body))) return null;
    const [first] = validate.errors ?? [];
    return first === undefined ? "body is invalid" : describe(first);
  };
}
