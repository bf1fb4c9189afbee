/**
 * How every Redis key receiptd writes is named (issue 36, Redis Cluster). One builder, so that
 * each key carries a hash tag, and the keys one command or Lua script touches share a slot.
 *
 * Redis Cluster hashes only the part of a key between its first `{` and the first `}` after it
 * (the hash tag), when that part is not empty. So:
 * - a key touched alone (a cap counter, a nonce, a challenge, an idempotency entry) is tagged
 *   with its own identity, `<prefix><family>:{<identity>}`: the keys spread over every slot, and
 *   a script on one key stays on that key's slot;
 * - keys touched together (the digest cache's index and its entries; a queue's budget hashes and
 *   its BullMQ keys) share one tag, so the script or BullMQ's own scripts find them on one node.
 *
 * The same names are used on a single Redis (one code path: a deployment moves from one to the
 * other without a second layout). `REDIS_PREFIX` must hold no `{` or `}` (config.ts refuses
 * them): a brace there would become the tag of every key and put them all in one slot.
 *
 * New keys: build them here, with `taggedKey`, never by hand.
 */

/** `receiptd` → `receiptd:`, so `<prefix>cap:…` reads as a namespace. */
export function normalisePrefix(prefix: string): string {
  return prefix === "" || prefix.endsWith(":") ? prefix : `${prefix}:`;
}

/**
 * `<prefix><family>:{<tag>}` and, with `rest`, `:<rest>` after it. `prefix` is normalised (it
 * ends with `:`); `tag` decides the slot, so keys that one command touches together must be
 * built with the same tag. A `}` inside `tag` would end the tag early: still one slot for
 * equal tags, but a poorer spread, so identities with braces are better hashed first.
 */
export function taggedKey(prefix: string, family: string, tag: string, rest?: string): string {
  const key = `${normalisePrefix(prefix)}${family}:{${tag}}`;
  return rest === undefined ? key : `${key}:${rest}`;
}

/**
 * BullMQ's `prefix` option for `queue`: `<prefix>{<queue>}`. BullMQ names its keys
 * `<prefix>:<queue>:…` and runs Lua scripts over several of them, so on a cluster they need one
 * tag (BullMQ's own advice: a `{…}` prefix). One tag per queue lets the two queues live on
 * different masters; the queue's budget hashes (queue-budget.ts) carry the same `{<queue>}` tag,
 * so a queue and its budget live together. Producers, workers, the metrics reader and any
 * external producer must all use it.
 */
export function bullmqPrefix(prefix: string, queue: string): string {
  return `${normalisePrefix(prefix)}{${queue}}`;
}
