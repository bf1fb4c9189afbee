/**
 * The proof of work of self-served evaluation keys (docs/evaluation-keys.md), solved by the
 * client and checked by the server with the same code.
 *
 * This module runs in the browser as well as on the server: it imports nothing (no `node:`
 * module, no package) and takes the SHA-256 function as an argument. That is why it lives in
 * `src/portable/`, the one folder both `src/web` (which may import only the verifier, its own
 * files and this folder) and the server's `src/access/evaluation` may import; the import
 * rules (`.dependency-cruiser.cjs`) keep the folder free of imports. The server passes
 * OpenSSL's (`node-sha256.ts`); a page passes `sha256` of `@noble/hashes/sha2`, which its
 * bundler inlines.
 *
 * The rule, exactly:
 * - `challenge` is the string `GET /keys/evaluation/challenge` returned, in ASCII;
 * - `nonce` is 1–64 characters of `A–Z a–z 0–9 - _`, chosen by the client;
 * - digest = SHA-256(ASCII bytes of challenge ‖ ASCII bytes of nonce), no separator;
 * - the work is done when the digest starts with at least `difficulty` zero bits, counted
 *   from the most significant bit of its first byte.
 *
 * A challenge token is `evk1.<difficulty>.<expires>.<salt>.<mac>`: the difficulty in bits,
 * the expiry in Unix seconds, 16 random bytes and the server's HMAC-SHA256 over the first four
 * fields, both in unpadded base64url. Only the server can check the MAC; `parseChallenge`
 * reads the fields so a client can show the difficulty and the expiry.
 */

/** SHA-256 of `data` (32 bytes). */
export type Sha256 = (data: Uint8Array) => Uint8Array;

export const CHALLENGE_VERSION = "evk1";
export const PROOF_OF_WORK_ALGORITHM = "sha256-leading-zero-bits";
/** The hardest difficulty a challenge may carry: about 4·10⁹ hashes on average. */
export const MAX_DIFFICULTY = 32;
export const MAX_NONCE_LENGTH = 64;

const NONCE_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const BASE64URL_16 = "[A-Za-z0-9_-]{22}";
const BASE64URL_32 = "[A-Za-z0-9_-]{43}";
const CHALLENGE_PATTERN = new RegExp(
  `^${CHALLENGE_VERSION}\\.(0|[1-9][0-9]?)\\.([1-9][0-9]{0,11})\\.(${BASE64URL_16})\\.(${BASE64URL_32})$`,
);

/** The fields of a challenge token, as written; the MAC is not checked here. */
export interface ChallengeFields {
  difficulty: number;
  /** Unix seconds after which the challenge is refused. */
  expiresAt: number;
  /** 16 random bytes, base64url: names the challenge in the replay ledger. */
  salt: string;
  mac: string;
  /** The part the MAC covers: `evk1.<difficulty>.<expires>.<salt>`. */
  signed: string;
}

/** The fields of a well-formed token, or null for anything else. */
export function parseChallenge(token: string): ChallengeFields | null {
  const match = CHALLENGE_PATTERN.exec(token);
  if (match === null) return null;
  const [, difficultyText = "", expiresText = "", salt = "", mac = ""] = match;
  const difficulty = Number(difficultyText);
  if (difficulty > MAX_DIFFICULTY) return null;
  return {
    difficulty,
    expiresAt: Number(expiresText),
    salt,
    mac,
    signed: token.slice(0, token.length - mac.length - 1),
  };
}

export function isWellFormedNonce(nonce: string): boolean {
  return NONCE_PATTERN.test(nonce);
}

/** The ASCII bytes of `text`; throws for any other character (tokens and nonces are ASCII). */
function ascii(text: string, into: Uint8Array = new Uint8Array(text.length), at = 0): Uint8Array {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code > 0x7f) throw new RangeError("challenge and nonce are ASCII");
    into[at + index] = code;
  }
  return into;
}

/** Zero bits at the start of `digest`, from the most significant bit of its first byte. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** SHA-256(challenge ‖ nonce). */
export function proofOfWorkDigest(sha256: Sha256, challenge: string, nonce: string): Uint8Array {
  const input = new Uint8Array(challenge.length + nonce.length);
  ascii(challenge, input, 0);
  ascii(nonce, input, challenge.length);
  return sha256(input);
}

/** Whether `nonce` is well formed and solves `challenge` at `difficulty`. */
export function checkProofOfWork(
  sha256: Sha256,
  challenge: string,
  nonce: string,
  difficulty: number,
): boolean {
  if (!isWellFormedNonce(nonce) || !/^[\x21-\x7e]*$/.test(challenge)) return false;
  return leadingZeroBits(proofOfWorkDigest(sha256, challenge, nonce)) >= difficulty;
}

export interface SolveOptions {
  /**
   * Characters put before the counter (`A–Z a–z 0–9 - _`, default none), so that two clients
   * sharing nothing still try different nonces, or so a nonce is easy to recognise.
   */
  prefix?: string;
  /** The first counter value tried (default 0). */
  start?: number;
  /** Give up after this many attempts (default: until the counter runs out). */
  maxAttempts?: number;
}

/**
 * Tries `prefix + counter` (decimal) for counter = start, start + 1, … and returns the first
 * nonce that solves the challenge, or null after `maxAttempts`. The input buffer is written
 * in place, so an attempt costs one SHA-256 and a few digit writes. Expect 2^difficulty
 * attempts on average.
 */
export function solveProofOfWork(
  sha256: Sha256,
  challenge: string,
  difficulty: number,
  options: SolveOptions = {},
): string | null {
  const solver = new Solver(sha256, challenge, difficulty, options);
  return solver.run(options.maxAttempts ?? Number.POSITIVE_INFINITY);
}

export interface SolveAsyncOptions extends SolveOptions {
  /** Attempts between two yields to the event loop (default 4096). */
  batch?: number;
  /** Told the attempts made so far after each batch (a page's progress display). */
  onProgress?: (attempts: number) => void;
  /** Stops the search: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * `solveProofOfWork` in batches, yielding to the event loop between them, so a page stays
 * responsive while it searches (or run it in a Web Worker). Resolves with the nonce.
 */
export async function solveProofOfWorkAsync(
  sha256: Sha256,
  challenge: string,
  difficulty: number,
  options: SolveAsyncOptions = {},
): Promise<string> {
  const solver = new Solver(sha256, challenge, difficulty, options);
  const batch = Math.max(1, options.batch ?? 4096);
  let left = options.maxAttempts ?? Number.POSITIVE_INFINITY;
  while (left > 0 && !solver.exhausted) {
    options.signal?.throwIfAborted();
    const found = solver.run(Math.min(batch, left));
    if (found !== null) return found;
    left -= batch;
    options.onProgress?.(solver.attempts);
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
  }
  throw new RangeError(`no nonce solves the challenge within ${solver.attempts} attempts`);
}

/** Decimal digits a counter may have: below 2^53, with room for the prefix in 64 characters. */
const MAX_COUNTER_DIGITS = 16;

class Solver {
  readonly #sha256: Sha256;
  readonly #difficulty: number;
  readonly #prefix: string;
  readonly #buffer: Uint8Array;
  /** Where the counter's digits start in `#buffer`. */
  readonly #digitsAt: number;
  #counter: number;
  attempts = 0;

  constructor(sha256: Sha256, challenge: string, difficulty: number, options: SolveOptions) {
    const prefix = options.prefix ?? "";
    if (prefix !== "" && !isWellFormedNonce(prefix)) {
      throw new RangeError("a nonce prefix is made of A–Z a–z 0–9 - _");
    }
    if (prefix.length + MAX_COUNTER_DIGITS > MAX_NONCE_LENGTH) {
      throw new RangeError(
        `a nonce prefix has at most ${MAX_NONCE_LENGTH - MAX_COUNTER_DIGITS} characters`,
      );
    }
    if (!Number.isInteger(difficulty) || difficulty < 0 || difficulty > 256) {
      throw new RangeError("a difficulty is a whole number of bits, 0–256");
    }
    const start = options.start ?? 0;
    if (!Number.isSafeInteger(start) || start < 0) {
      throw new RangeError("the first counter is a whole number ≥ 0");
    }
    this.#sha256 = sha256;
    this.#difficulty = difficulty;
    this.#prefix = prefix;
    this.#digitsAt = challenge.length + prefix.length;
    this.#buffer = new Uint8Array(this.#digitsAt + MAX_COUNTER_DIGITS);
    ascii(challenge, this.#buffer, 0);
    ascii(prefix, this.#buffer, challenge.length);
    this.#counter = start;
  }

  /** True once every counter value has been tried. */
  get exhausted(): boolean {
    return !Number.isSafeInteger(this.#counter);
  }

  /** Up to `attempts` more tries; the nonce found, or null. */
  run(attempts: number): string | null {
    for (let done = 0; done < attempts; done += 1) {
      if (this.exhausted) return null;
      const digits = String(this.#counter);
      for (let index = 0; index < digits.length; index += 1) {
        this.#buffer[this.#digitsAt + index] = digits.charCodeAt(index);
      }
      const input = this.#buffer.subarray(0, this.#digitsAt + digits.length);
      this.attempts += 1;
      this.#counter += 1;
      if (leadingZeroBits(this.#sha256(input)) >= this.#difficulty) {
        return `${this.#prefix}${digits}`;
      }
    }
    return null;
  }
}
