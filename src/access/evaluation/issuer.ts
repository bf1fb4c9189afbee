/**
 * Self-served evaluation keys (docs/evaluation-keys.md): issues a key to an anonymous client
 * that solved a proof-of-work challenge, within a per-address and an overall daily limit.
 * The HTTP route (`service/endpoints/evaluation-keys`) turns the outcomes into answers; this
 * module knows no HTTP.
 *
 * The order of the checks on issuance, and why:
 * 1. the challenge's form, MAC, expiry and work: stateless, so refusing costs no I/O;
 * 2. spending the challenge in the replay ledger: a replay is refused before it can count
 *    against anything;
 * 3. the client address's daily count, then the overall daily count (the cap store, so the
 *    counters are shared by every instance in distributed mode), each given back when a later
 *    step refuses or fails;
 * 4. the key itself, in the key store every key lives in.
 * The anonymous daily cap is charged by the access plugin before any of this, like every
 * anonymous call, and given back when the answer is a refusal.
 */
import type { CreatedKey, KeyStore } from "../api-keys.js";
import type { CapStore } from "../caps.js";
import { type ChallengeLedger, SPENT_GRACE_MS } from "./challenge-ledger.js";
import { type ChallengeRefusal, ChallengeSigner, type IssuedChallenge } from "./challenges.js";
import { addressCounter } from "./client-address.js";

/** The terms in force (`EvaluationKeysConfig`). */
export interface EvaluationTerms {
  keyDailyCap: number;
  ttlHours: number;
  perAddressDaily: number;
  perDay: number;
  powBits: number;
}

/** A refusal of issuance; `limit` and `retryAfterSeconds` come with the two daily limits. */
export type IssueRefusal =
  | { code: ChallengeRefusal }
  | { code: "challenge_already_used" }
  | {
      code: "evaluation_limit_reached" | "evaluation_keys_exhausted";
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

/** The replay ledger could not be asked: nobody can tell a replay now (answered 503). */
export class ChallengeLedgerUnavailableError extends Error {
  override readonly name = "ChallengeLedgerUnavailableError";
}

/** Cap-store buckets of the two issuance limits (never a principal, never an address). */
export const ADDRESS_BUCKET_PREFIX = "evaluation-address:";
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

  /** A fresh challenge at the configured difficulty; nothing is stored. */
  challenge(): IssuedChallenge {
    return this.#signer.issue(this.terms.powBits, this.#clock());
  }

  /** The bucket a client address's issuances are counted in. */
  addressBucket(clientAddress: string | undefined): string {
    const counter =
      clientAddress === undefined ? null : addressCounter(clientAddress, this.#addressKey);
    return `${ADDRESS_BUCKET_PREFIX}${counter ?? UNKNOWN_ADDRESS}`;
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

    const { perAddressDaily, perDay } = this.terms;
    const address = this.addressBucket(request.clientAddress);
    const mine = await this.#caps.consume(address, perAddressDaily, nowMs);
    if (!mine.allowed) {
      return refused({
        code: "evaluation_limit_reached",
        limit: perAddressDaily,
        retryAfterSeconds: mine.resetSeconds,
      });
    }
    const everyone = await this.#caps.consume(ISSUANCE_BUCKET, perDay, nowMs);
    if (!everyone.allowed) {
      await this.#giveBack([address], nowMs);
      return refused({
        code: "evaluation_keys_exhausted",
        limit: perDay,
        retryAfterSeconds: everyone.resetSeconds,
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
      await this.#giveBack([address, ISSUANCE_BUCKET], nowMs);
      throw error;
    }
  }

  async #giveBack(buckets: string[], nowMs: number): Promise<void> {
    for (const bucket of buckets) {
      try {
        await this.#caps.refund(bucket, nowMs);
      } catch {
        // A count that cannot be given back stays counted: the safe side of a limit.
      }
    }
  }
}

function refused(refusal: IssueRefusal): IssueOutcome {
  return { ok: false, refusal };
}
