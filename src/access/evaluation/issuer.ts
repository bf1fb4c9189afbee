/**
 * Self-served evaluation keys (docs/evaluation-keys.md): issues a key to an anonymous client
 * that solved a proof-of-work challenge, within a per-address, a per-network (IPv4 /24, IPv6
 * /48) and an overall daily limit. The challenge's difficulty rises as the day's issuance
 * fills, so taking many keys costs more than many times one.
 * The HTTP route (`service/endpoints/evaluation-keys`) turns the outcomes into answers; this
 * module knows no HTTP.
 *
 * The order of the checks on issuance, and why:
 * 1. the challenge's form, MAC, expiry and work: stateless, so refusing costs no I/O;
 * 2. spending the challenge in the replay ledger: a replay is refused before it can count
 *    against anything;
 * 3. the client address's daily count, its network's, then the overall daily count (the cap
 *    store, so the counters are shared by every instance in distributed mode), all or none:
 *    each is given back when a later one refuses or the key cannot be written;
 * 4. the key itself, in the key store every key lives in.
 * The anonymous daily cap is charged by the access plugin before any of this, like every
 * anonymous call, and given back when the answer is a refusal.
 */

import { MAX_DIFFICULTY } from "../../portable/proof-of-work.js";
import { codedErrorClass } from "../../verifier/coded-error.js";
import type { CreatedKey, KeyStore } from "../api-keys.js";
import { type CapStore, consumeAll, refundAll } from "../caps.js";
import { type ChallengeLedger, SPENT_GRACE_MS } from "./challenge-ledger.js";
import { type ChallengeRefusal, ChallengeSigner, type IssuedChallenge } from "./challenges.js";
import { addressCounter, CLIENT, type NetworkWidth, SITE } from "./client-address.js";

/** The terms in force (`EvaluationKeysConfig`). */
export interface EvaluationTerms {
  keyDailyCap: number;
  ttlHours: number;
  perAddressDaily: number;
  perNetworkDaily: number;
  perDay: number;
  powBits: number;
  powRampBits: number;
}

/**
 * The difficulty of a challenge handed out after `issued` keys today: `powBits` at first,
 * rising in equal steps to `powBits + powRampBits` as the day's issuance fills. Each bit
 * doubles the expected work, so the last keys of a day cost 2^powRampBits times the first.
 */
export function difficultyAfter(issued: number, terms: EvaluationTerms): number {
  const filled = Math.min(1, Math.max(0, issued) / terms.perDay);
  return Math.min(MAX_DIFFICULTY, terms.powBits + Math.floor(terms.powRampBits * filled));
}

/** A refusal of issuance; `limit` and `retryAfterSeconds` come with the two daily limits. */
export type IssueRefusal =
  | { code: ChallengeRefusal }
  | { code: "challenge_already_used" }
  | {
      code: "evaluation_limit_reached" | "evaluation_keys_exhausted";
      /** Which limit refused: the address's, its network's, or everyone's. */
      scope: "address" | "network" | "overall";
      limit: number;
      /** Seconds to the next 00:00 UTC, when the counters start again. */
      retryAfterSeconds: number;
    };

export type IssueOutcome = { ok: true; created: CreatedKey } | { ok: false; refusal: IssueRefusal };

export interface IssueRequest {
  challenge: string;
  nonce: string;
  /** The client's address as the service sees it (`TRUST_PROXY` applied); may be unknown. */
  clientAddress: string | undefined;
}

export type ChallengeLedgerUnavailableErrorCode = "challenge_ledger_unavailable";
/** The replay ledger could not be asked: nobody can tell a replay now (answered 503). */
export class ChallengeLedgerUnavailableError extends codedErrorClass<ChallengeLedgerUnavailableErrorCode>(
  "challenge_ledger_unavailable",
) {
  override readonly name = "ChallengeLedgerUnavailableError";
}

/** Cap-store buckets of the three issuance limits (never a principal, never an address). */
export const ADDRESS_BUCKET_PREFIX = "evaluation-address:";
export const NETWORK_BUCKET_PREFIX = "evaluation-network:";
export const ISSUANCE_BUCKET = "evaluation-issuance";
/** Addresses the service cannot read (no socket peer) share one counter. */
const UNKNOWN_ADDRESS = "unknown";

export interface EvaluationKeysOptions {
  terms: EvaluationTerms;
  keys: KeyStore;
  caps: CapStore;
  ledger: ChallengeLedger;
  /** HMAC key of challenges (`CHALLENGE_KEY_INFO`). */
  challengeKey: Uint8Array;
  /** HMAC key of client-address counters (`ADDRESS_KEY_INFO`). */
  addressKey: Uint8Array;
  clock: () => number;
}

export class EvaluationKeys {
  readonly terms: Readonly<EvaluationTerms>;
  readonly #keys: KeyStore;
  readonly #caps: CapStore;
  readonly #ledger: ChallengeLedger;
  readonly #signer: ChallengeSigner;
  readonly #addressKey: Uint8Array;
  readonly #clock: () => number;

  constructor(options: EvaluationKeysOptions) {
    this.terms = { ...options.terms };
    this.#keys = options.keys;
    this.#caps = options.caps;
    this.#ledger = options.ledger;
    this.#signer = new ChallengeSigner(options.challengeKey);
    this.#addressKey = options.addressKey;
    this.#clock = options.clock;
  }

  /** Seconds a challenge may be solved and spent. */
  get challengeTtlSeconds(): number {
    return this.#signer.ttlSeconds;
  }

  /**
   * A fresh challenge at the difficulty of the moment (`difficultyAfter` the keys issued
   * today); nothing is stored. The challenge states its difficulty under the MAC, and is
   * honoured at that difficulty for its lifetime however many keys are issued meanwhile.
   */
  async challenge(): Promise<IssuedChallenge> {
    const nowMs = this.#clock();
    return this.#signer.issue(await this.currentDifficulty(nowMs), nowMs);
  }

  /** The difficulty a challenge handed out at `nowMs` gets. */
  async currentDifficulty(nowMs: number = this.#clock()): Promise<number> {
    if (this.terms.powRampBits === 0) return this.terms.powBits;
    // A store that cannot be read must not stop issuance: the ramp's top is the safe side.
    const issued = await this.#caps.count(ISSUANCE_BUCKET, nowMs).catch(() => this.terms.perDay);
    return difficultyAfter(issued, this.terms);
  }

  /** The bucket a client address's issuances are counted in. */
  addressBucket(clientAddress: string | undefined): string {
    return this.#bucket(ADDRESS_BUCKET_PREFIX, clientAddress, CLIENT);
  }

  /** The bucket the issuances of a client address's network (/24, /48) are counted in. */
  networkBucket(clientAddress: string | undefined): string {
    return this.#bucket(NETWORK_BUCKET_PREFIX, clientAddress, SITE);
  }

  #bucket(prefix: string, clientAddress: string | undefined, width: NetworkWidth): string {
    const counter =
      clientAddress === undefined ? null : addressCounter(clientAddress, this.#addressKey, width);
    return `${prefix}${counter ?? UNKNOWN_ADDRESS}`;
  }

  async issue(request: IssueRequest): Promise<IssueOutcome> {
    const nowMs = this.#clock();
    const check = this.#signer.check(request.challenge, request.nonce, nowMs);
    if (!check.ok) return refused({ code: check.refusal });

    let spent: boolean;
    try {
      spent = await this.#ledger.spend(
        check.fields.salt,
        check.fields.expiresAt * 1000 + SPENT_GRACE_MS,
      );
    } catch (error) {
      throw new ChallengeLedgerUnavailableError("the challenge ledger cannot be reached", {
        cause: error,
      });
    }
    if (!spent) return refused({ code: "challenge_already_used" });

    const { perAddressDaily, perNetworkDaily, perDay } = this.terms;
    const buckets = [
      this.addressBucket(request.clientAddress),
      this.networkBucket(request.clientAddress),
      ISSUANCE_BUCKET,
    ];
    const limits = [perAddressDaily, perNetworkDaily, perDay];
    const { decision, refusedBy } = await consumeAll(
      this.#caps,
      buckets.map((bucket, index) => ({ bucket, limit: limits[index] as number })),
      nowMs,
    );
    if (refusedBy !== null) {
      const scope = (["address", "network", "overall"] as const)[refusedBy] ?? "overall";
      return refused({
        code: scope === "overall" ? "evaluation_keys_exhausted" : "evaluation_limit_reached",
        scope,
        limit: decision.limit,
        retryAfterSeconds: decision.resetSeconds,
      });
    }
    try {
      const created = await this.#keys.createEvaluation({
        dailyCap: this.terms.keyDailyCap,
        lifetimeMs: this.terms.ttlHours * 3_600_000,
      });
      return { ok: true, created };
    } catch (error) {
      // No key was issued: the counts are given back (the challenge stays spent).
      await refundAll(this.#caps, buckets, nowMs);
      throw error;
    }
  }
}

function refused(refusal: IssueRefusal): IssueOutcome {
  return { ok: false, refusal };
}
