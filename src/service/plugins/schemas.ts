/**
 * Route schemas validate query strings, params and headers in Fastify as usual. Bodies are
 * the exception: they reach handlers as raw bytes (the parser of http/body-admission.ts) and
 * are validated by the worker after strict parsing, against the same `body` schema
 * (`bodyValidator`, src/validation/body-validator.ts). So the body schema stays declared on
 * the route — for the OpenAPI document — and Fastify's own body validation is switched off.
 */
import { Ajv } from "ajv";
import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

export function registerSchemaValidation(app: FastifyInstance): void {
  // Fastify's defaults for the parts it still validates: coerce query strings to the
  // declared types, fill defaults, report the first error.
  const ajv = new Ajv({
    coerceTypes: "array",
    useDefaults: true,
    removeAdditional: true,
    strict: false,
  });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === "body") return () => true;
    return ajv.compile(schema);
  });
}

export const schemaValidation = fastifyPlugin(
  async (app: FastifyInstance) => registerSchemaValidation(app),
  { name: PLATFORM.schemas, fastify: FASTIFY_VERSION },
);
