/**
 * Who a request is counted against (service.md §9): an API key, an evaluation key, an x402
 * payer, or the shared anonymous bucket. Evaluation keys have a principal kind of their own
 * (`eval:<id>`), so that every audit line says, when it is written, that the call was made with
 * an evaluation key: billing skips them from the audit files alone, whatever became of the key
 * record since. The same string names the principal in audit lines and the daily-cap
 * bucket, so an audit line's principal is exactly the counter the request was charged to.
 *
 * A principal never carries anything a client chose beyond a key id (a prefix of the key's
 * SHA-256) or a payer address, so audit lines built from it stay content-free.
 */

/** `key:<id>`, `eval:<id>`, `x402:<payer address, lowercase>`, or `anonymous`. */
export type Principal = `key:${string}` | `eval:${string}` | `x402:0x${string}` | "anonymous";

export const ANONYMOUS: Principal = "anonymous";

const KEY_ID = /^[0-9a-f]{8,64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const PRINCIPAL = /^(?:key:[0-9a-f]{8,64}|eval:[0-9a-f]{8,64}|x402:0x[0-9a-f]{40}|anonymous)$/;

/** The principal (and cap bucket) of an API key, from its id (`ApiKey.id`). */
export function keyPrincipal(keyId: string): Principal {
  if (!KEY_ID.test(keyId)) throw new RangeError("a key id is 8–64 lowercase hex digits");
  return `key:${keyId}`;
}

/** The principal (and cap bucket) of an evaluation key, from its id. */
export function evaluationPrincipal(keyId: string): Principal {
  if (!KEY_ID.test(keyId)) throw new RangeError("a key id is 8–64 lowercase hex digits");
  return `eval:${keyId}`;
}

/**
 * The principal (and cap bucket) of an x402 payer. Addresses are lowercased so the
 * checksummed and plain spellings of one address share one counter.
 */
export function x402Principal(payerAddress: string): Principal {
  if (!ADDRESS.test(payerAddress)) throw new RangeError("a payer address is 0x + 40 hex digits");
  return `x402:0x${payerAddress.slice(2).toLowerCase()}`;
}

export function isPrincipal(text: string): text is Principal {
  return PRINCIPAL.test(text);
}

/** The kind of a principal's bucket: a label that stays bounded. */
export function capBucketOf(principal: Principal): "key" | "evaluation" | "x402" | "anonymous" {
  if (principal === ANONYMOUS) return "anonymous";
  if (principal.startsWith("key:")) return "key";
  return principal.startsWith("eval:") ? "evaluation" : "x402";
}
