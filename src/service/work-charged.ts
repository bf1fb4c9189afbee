/**
 * Which answers are charged (docs/access-decisions.md, "What is charged"): a result (2xx,
 * `isChargedStatus`), or a refusal that reports work done (`CHARGED_REFUSALS` in errors.ts),
 * which the route marks here as it sends it; but not a `200` that carries only in-band
 * refusals (`chargeNoWork`). Caps, x402 settlement and the audit line (hence
 * billing) all read `isChargedAnswer`, so they cannot disagree.
 */
import type { FastifyReply } from "fastify";
import { isChargedStatus } from "../access/caps.js";

const workDone = new WeakSet<FastifyReply>();
const unitsOfReply = new WeakMap<FastifyReply, number>();
const replayed = new WeakSet<FastifyReply>();
const noWork = new WeakSet<FastifyReply>();

/** `reply` carries a refusal after real work: charge it like a result. */
export function chargeWorkDone(reply: FastifyReply): void {
  workDone.add(reply);
}

/**
 * `reply` is a `200` that carries no work done: a `POST /mcp` reply whose tool calls all ended
 * in tool errors or JSON-RPC errors, each of which its HTTP endpoint answers with an uncharged
 * 4xx/5xx (docs/access-decisions.md, "In-band tool errors"). Not charged, whatever its status.
 */
export function chargeNoWork(reply: FastifyReply): void {
  noWork.add(reply);
}

/**
 * `reply`'s answer is charged `units` cap units (docs/cost-bounds.md): its estimate's, or a
 * task cut by the deadline's run time. Access control charges the units beyond the one the
 * request holds when the answer is charged, and its rate-limit headers show them.
 */
export function chargeUnits(reply: FastifyReply, units: number): void {
  unitsOfReply.set(reply, Math.max(unitsOfReply.get(reply) ?? 1, Math.ceil(units)));
}

/** The cap units `reply`'s answer is charged if it is charged: 1 unless `chargeUnits` said more. */
export function unitsCharged(reply: FastifyReply): number {
  return unitsOfReply.get(reply) ?? 1;
}

/**
 * `reply` gives a retry the answer its `Idempotency-Key` got the first time
 * (plugins/idempotency.ts): that answer was charged once, so this one is not, whatever its
 * status.
 */
export function markReplayed(reply: FastifyReply): void {
  replayed.add(reply);
}

export function isReplayedAnswer(reply: FastifyReply): boolean {
  return replayed.has(reply);
}

/** Whether the answer `reply` carries is charged: to its cap, to its payer, on the bill. */
export function isChargedAnswer(reply: FastifyReply): boolean {
  if (replayed.has(reply) || noWork.has(reply)) return false;
  return isChargedStatus(reply.statusCode) || workDone.has(reply);
}

/** Whether `reply` is a 2xx charged nothing, for want of work done (the audit line says so). */
export function isUnchargedResult(reply: FastifyReply): boolean {
  return noWork.has(reply) && isChargedStatus(reply.statusCode) && !replayed.has(reply);
}

/** Whether `reply` is a refusal charged for its work (the audit line says so). */
export function isChargedRefusal(reply: FastifyReply): boolean {
  return !isChargedStatus(reply.statusCode) && workDone.has(reply);
}
