/**
 * Stateless proof-of-work challenges for evaluation keys (docs/evaluation-keys.md). A
 * challenge carries its own difficulty and expiry and the server's HMAC over them, so any
 * instance of a deployment can check one it did not issue, and nothing is stored until a
 * challenge is spent (the replay ledger, `challenge-ledger.ts`, then remembers it until it
 * expires).
 *
 * The HMAC key is derived from the deployment's internal token (`InternalToken.deriveKey` with
 * `CHALLENGE_KEY_INFO`), a secret every instance already shares (`INTERNAL_TOKEN_FILE`), so it
 * needs no file of its own; its own `info` label keeps it independent of the token's own use
 * and of the client-address key (`ADDRESS_KEY_INFO`).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import {
  CHALLENGE_VERSION,
  type ChallengeFields,
  checkProofOfWork,
  MAX_DIFFICULTY,
  parseChallenge,
} from "../../portable/proof-of-work.js";
import { nodeSha256 } from "./node-sha256.js";

/** How long a challenge may be solved and spent. */
export const CHALLENGE_TTL_SECONDS = 300;
const SALT_BYTES = 16;

/** The HKDF label of the challenges' HMAC key. */
export const CHALLENGE_KEY_INFO = "receiptd evaluation-keys challenge v1";
/** The HKDF label of the key that names client-address counters. */
export const ADDRESS_KEY_INFO = "receiptd evaluation-keys client-address v1";

export interface IssuedChallenge {
  challenge: string;
  difficulty: number;
  /** Unix seconds. */
  expiresAt: number;
}

export type ChallengeRefusal =
  | "invalid_challenge"
  | "challenge_expired"
  | "insufficient_proof_of_work";

export type ChallengeCheck =
  | { ok: true; fields: ChallengeFields }
  | { ok: false; refusal: ChallengeRefusal };

export class ChallengeSigner {
  readonly #key: Buffer;
  readonly #ttlSeconds: number;

  constructor(key: Uint8Array, options: { ttlSeconds?: number } = {}) {
    this.#key = Buffer.from(key);
    this.#ttlSeconds = options.ttlSeconds ?? CHALLENGE_TTL_SECONDS;
  }

  get ttlSeconds(): number {
    return this.#ttlSeconds;
  }

  #mac(signed: string): string {
    return createHmac("sha256", this.#key).update(signed, "ascii").digest("base64url");
  }

  issue(difficulty: number, nowMs: number): IssuedChallenge {
    if (!Number.isInteger(difficulty) || difficulty < 0 || difficulty > MAX_DIFFICULTY) {
      throw new RangeError(`a difficulty is a whole number of bits, 0–${MAX_DIFFICULTY}`);
    }
    const expiresAt = Math.floor(nowMs / 1000) + this.#ttlSeconds;
    const salt = randomBytes(SALT_BYTES).toString("base64url");
    const signed = `${CHALLENGE_VERSION}.${difficulty}.${expiresAt}.${salt}`;
    return { challenge: `${signed}.${this.#mac(signed)}`, difficulty, expiresAt };
  }

  /**
   * Whether `nonce` is a proof of work for a challenge this deployment issued and that is
   * still valid at `nowMs`. The checks run in this order, each with its own refusal: the token's
   * form and MAC (`invalid_challenge`: altered, or issued by another deployment), its expiry
   * (`challenge_expired`), the work (`insufficient_proof_of_work`). Single use is the
   * caller's next step, with the ledger.
   */
  check(token: string, nonce: string, nowMs: number): ChallengeCheck {
    const fields = parseChallenge(token);
    if (fields === null) return { ok: false, refusal: "invalid_challenge" };
    const expected = Buffer.from(this.#mac(fields.signed), "ascii");
    const presented = Buffer.from(fields.mac, "ascii");
    if (expected.length !== presented.length || !timingSafeEqual(expected, presented)) {
      return { ok: false, refusal: "invalid_challenge" };
    }
    if (nowMs >= fields.expiresAt * 1000) return { ok: false, refusal: "challenge_expired" };
    if (!checkProofOfWork(nodeSha256, token, nonce, fields.difficulty)) {
      return { ok: false, refusal: "insufficient_proof_of_work" };
    }
    return { ok: true, fields };
  }
}
