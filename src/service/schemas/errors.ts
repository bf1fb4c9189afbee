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

/** Errors any route can answer with, besides its own. */
export const commonErrorResponses = {
  413: errorResponseSchema,
  500: errorResponseSchema,
  503: errorResponseSchema,
} as const;
