/**
 * The settlement intent journal (issue 24, finding 3). Between the facilitator's `/settle`
 * and the durable receipt job lies a window in which a crash (kill -9) used to leave a
 * payment settled at the facilitator with no receipt and no record. So:
 *
 * 1. before `/settle`, the intent is journaled (fsync): the facilitator request and every
 *    member of the settlement but its transaction;
 * 2. after `/settle`, a declined payment removes it; a settled one removes it once its receipt
 *    job is durable (`onSettled`); an unknown outcome leaves it;
 * 3. at start, and then every `retryMs`, each intent left over is reconciled: the facilitator is
 *    asked whether the authorization settled (`authorizationState`). Settled → the receipt job
 *    is recorded under the facilitator's transaction and the intent removed; not settled and
 *    past its `validBefore` (it can never settle now) → removed; anything else (not settled
 *    yet, or a facilitator that cannot tell) → kept, and logged at error level once per
 *    process with its content-free members, so an operator sees it and can settle it by hand.
 *
 * So no settled payment ends without a receipt or an operator-visible record. Entries live in
 * `DATA_DIR/journal/settlement-intents/<intent id>.json` (`JobJournal`).
 */
import { createHash } from "node:crypto";
import type { JobJournal, JsonData } from "../storage/job-journal.js";
import { fromPlain, isObject, toPlain } from "../verifier/json/value.js";
import type { FacilitatorClient, FacilitatorRequest } from "./facilitator-client.js";
import type { Settlement } from "./settlement-receipt.js";

export const SETTLEMENT_INTENTS_JOURNAL = "settlement-intents";
const DEFAULT_RETRY_MS = 60_000;

/** A settlement before the facilitator has named its transaction. */
export type IntendedSettlement = Omit<Settlement, "tx">;

type IntentEntry = {
  request: { x402Version: 1 | 2; paymentPayload: JsonData; paymentRequirements: JsonData };
  settlement: { [key: string]: string | null };
  /** The authorization's `validBefore` (Unix seconds, decimal): it cannot settle after it. */
  validBefore: string;
};

/** Where intents left unresolved are reported (a pino logger fits); content-free. */
export interface IntentLog {
  info(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface SettlementIntentsOptions {
  journal: JobJournal<IntentEntry>;
  facilitator: FacilitatorClient;
  /** Records a settled payment's receipt job (the `SettlementRecorder`); resolves once durable. */
  onSettled: (settlement: Settlement) => Promise<void>;
  log: IntentLog;
  clock: () => number;
  retryMs?: number;
}

/** `intent-` + SHA-256 of the authorization's identity: one intent per authorization. */
function intentId(request: FacilitatorRequest): string {
  const payload = request.paymentPayload.get("payload");
  const authorization = isObject(payload) ? payload.get("authorization") : undefined;
  const identity = isObject(authorization)
    ? `${String(authorization.get("from"))}|${String(authorization.get("nonce"))}`
    : JSON.stringify(toPlain(request.paymentPayload));
  return `intent-${createHash("sha256").update(identity.toLowerCase()).digest("hex")}`;
}

function requestOf(entry: IntentEntry): FacilitatorRequest | null {
  const paymentPayload = fromPlain(entry.request.paymentPayload);
  const paymentRequirements = fromPlain(entry.request.paymentRequirements);
  if (!isObject(paymentPayload) || !isObject(paymentRequirements)) return null;
  return { x402Version: entry.request.x402Version, paymentPayload, paymentRequirements };
}

export class SettlementIntents {
  readonly #journal: JobJournal<IntentEntry>;
  readonly #facilitator: FacilitatorClient;
  readonly #onSettled: (settlement: Settlement) => Promise<void>;
  readonly #log: IntentLog;
  readonly #clock: () => number;
  readonly #retryMs: number;
  /** Intents whose `/settle` runs in this process now: never reconciled meanwhile. */
  readonly #inFlight = new Set<string>();
  /** Intents already reported as unresolved (one error line each per process). */
  readonly #reported = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #reconciling: Promise<void> | null = null;

  constructor(options: SettlementIntentsOptions) {
    this.#journal = options.journal;
    this.#facilitator = options.facilitator;
    this.#onSettled = options.onSettled;
    this.#log = options.log;
    this.#clock = options.clock;
    this.#retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
  }

  /** Opens the journal and reconciles what a crash left, in the background. */
  async start(): Promise<void> {
    await this.#journal.open();
    this.#reconciling = this.reconcile();
    this.#timer = setInterval(() => {
      this.#reconciling ??= this.reconcile();
    }, this.#retryMs);
    this.#timer.unref();
  }

  /** Journals the intent before `/settle`; rejects when it cannot be made durable. */
  async begin(
    request: FacilitatorRequest,
    settlement: IntendedSettlement,
    validBefore: bigint,
  ): Promise<string> {
    const id = intentId(request);
    const members: { [key: string]: string | null } = {};
    for (const [name, value] of Object.entries(settlement)) {
      if (typeof value === "string" || value === null) members[name] = value;
    }
    this.#inFlight.add(id);
    try {
      await this.#journal.write(id, {
        request: {
          x402Version: request.x402Version,
          paymentPayload: toPlain(request.paymentPayload) as JsonData,
          paymentRequirements: toPlain(request.paymentRequirements) as JsonData,
        },
        settlement: members,
        validBefore: validBefore.toString(),
      });
    } catch (error) {
      this.#inFlight.delete(id);
      throw error;
    }
    return id;
  }

  /**
   * The `/settle` of `id` is over. `resolved`: declined, or settled with its receipt job
   * durable, so the intent is dropped; otherwise (an unknown outcome) it stays for
   * reconciliation.
   */
  async end(id: string, resolved: boolean): Promise<void> {
    this.#inFlight.delete(id);
    if (resolved) await this.#journal.remove(id).catch(() => {});
  }

  /** One pass over the journal (tests call it; the timer and `start` do in service). */
  async reconcile(): Promise<void> {
    try {
      const { entries } = await this.#journal.read();
      for (const { jobId, payload } of entries) {
        if (this.#inFlight.has(jobId)) continue;
        await this.#reconcileOne(jobId, payload);
      }
    } catch (error) {
      this.#log.error({ err: error }, "settlement intents could not be reconciled");
    } finally {
      this.#reconciling = null;
    }
  }

  async #reconcileOne(id: string, entry: IntentEntry): Promise<void> {
    const request = requestOf(entry);
    const described = { intent: id, ...entry.settlement, ua: undefined };
    if (request === null) {
      this.#reportOnce(id, { ...described, state: "unreadable" });
      return;
    }
    const state = await this.#facilitator.authorizationState(request);
    if (state.status === "settled") {
      await this.#onSettled({ ...entry.settlement, tx: state.transaction } as Settlement);
      await this.#journal.remove(id);
      this.#log.info(
        { ...described, tx: state.transaction },
        "interrupted settlement reconciled: settled at the facilitator, receipt recorded",
      );
      return;
    }
    const expired = BigInt(entry.validBefore) * 1000n < BigInt(this.#clock());
    if (state.status === "not_settled" && expired) {
      await this.#journal.remove(id);
      this.#log.info(described, "interrupted settlement reconciled: never settled");
      return;
    }
    this.#reportOnce(id, {
      ...described,
      state: state.status === "not_settled" ? "not_settled_yet" : state.code,
    });
  }

  #reportOnce(id: string, details: object): void {
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    this.#log.error(
      details,
      "settlement intent unresolved: it stays journaled and is asked about again",
    );
  }

  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#reconciling;
  }
}

export type { IntentEntry };
