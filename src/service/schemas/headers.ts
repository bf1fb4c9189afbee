/**
 * OpenAPI header objects of the standard fields the access plugins send or read (issue 28):
 * the IETF rate-limit fields beside the seed's `X-RateLimit-*`, and the `Idempotency-Key`
 * of keyed and paid writes. `/openapi.json` (meta/openapi.ts) places them; their meaning is
 * here, next to the other shared schemas.
 */

/** draft-ietf-httpapi-ratelimit-headers-11, as `rateLimitHeaders` (access/caps.ts) writes them. */
export const rateLimitFieldHeaders = {
  "RateLimit-Policy": {
    description:
      'the daily cap as a structured field (draft-ietf-httpapi-ratelimit-headers-11): `"<id>";q=<quota>;w=86400`, ' +
      "the id the kind of bucket counted (`key`, `evaluation`, `x402`, `anonymous`, `anonymous-address`, `anonymous-network`); " +
      "the same figures as `X-RateLimit-Limit`",
    schema: { type: "string", example: '"key";q=1000;w=86400' },
  },
  RateLimit: {
    description:
      'the bucket\'s state as a structured field: `"<id>";r=<remaining>;t=<seconds to reset>`, ' +
      "the same figures as `X-RateLimit-Remaining` and `X-RateLimit-Reset`",
    schema: { type: "string", example: '"key";r=998;t=3600' },
  },
} as const;

/** The bounds of an `Idempotency-Key` (plugins/idempotency.ts checks them). */
export const IDEMPOTENCY_KEY_PATTERN = "^[\\x21-\\x7e]{1,255}$";

/** The request header parameter of an idempotent write (draft-ietf-httpapi-idempotency-key-header-07). */
export const idempotencyKeyParameter = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "1–255 visible ASCII characters (no spaces; an sf-string's quotes are read as part of the key). " +
    "A retry with the same key, credential and body within 24 h gets the first answer again " +
    "(`Idempotent-Replayed: true`), charged once; the same key with another body is " +
    "`422 idempotency_key_reused`, a retry while the first is running `409 idempotency_key_in_flight`.",
  schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN },
} as const;
