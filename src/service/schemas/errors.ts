import { ERROR_STATUS, type ErrorCode } from "../errors.js";

/** The error body of service.md §0, shared by every route's response schemas. */
export const errorResponseSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: { type: "string", description: "stable snake_case code" },
    detail: { type: "string" },
    limit: {
      type: "integer",
      description:
        "the limit the request passed: `body_too_large` (bytes), `batch_too_large` (bundles), " +
        "`result_too_large` (bytes of errors and reasons)",
    },
    hint: { type: "string" },
    docs: { type: "string" },
    request_id: { type: "string" },
  },
} as const;

/**
 * Errors any route can answer with, besides its own. (`/openapi.json` adds the refusals of
 * each route's kind, 413 `body_too_large` for a route with a body among them.)
 */
export const commonErrorResponses = {
  500: errorResponseSchema,
  503: errorResponseSchema,
} as const;

/** `codes` grouped by their status in `ERROR_STATUS`, each group in the table's order. */
export function codesByStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const wanted = new Set(codes);
  const groups = new Map<number, ErrorCode[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS) as [ErrorCode, number][]) {
    if (!wanted.has(code)) continue;
    const group = groups.get(status) ?? [];
    group.push(code);
    groups.set(status, group);
  }
  return new Map([...groups].sort(([a], [b]) => a - b));
}

/** A response description naming codes: "`missing_key`, `invalid_key`". */
export function describeCodes(codes: readonly string[]): string {
  return codes.map((code) => `\`${code}\``).join(", ");
}
