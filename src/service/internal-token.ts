/**
 * The shared secret of `POST /payment-receipts` (service.md §4, §13 `INTERNAL_TOKEN_FILE`).
 * Loopback alone is not enough: behind a reverse proxy on the same host every request comes
 * from loopback. The token is created on first start (32 random bytes, hex, mode 0600) unless
 * the operator supplied the file, and read once at startup: replacing it takes a restart.
 */
import { createHash, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { createFileOnce, readIfPresent } from "../storage/atomic-file.js";
import { codedErrorClass } from "../verifier/coded-error.js";

/** Header values are visible ASCII; shorter tokens are refused as too easy to guess. */
const TOKEN = /^[\x21-\x7e]{32,1024}$/;

export type InternalTokenErrorCode = "internal_token_invalid";
export class InternalTokenError extends codedErrorClass<InternalTokenErrorCode>(
  "internal_token_invalid",
) {
  override readonly name = "InternalTokenError";
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

export class InternalToken {
  /** Only the digest is kept: comparing equal-length digests leaks neither value nor length. */
  readonly #digest: Buffer;

  constructor(token: string) {
    if (!TOKEN.test(token)) {
      throw new InternalTokenError(
        "the internal token must be 32 to 1024 visible ASCII characters",
      );
    }
    this.#digest = sha256(token);
  }

  /**
   * A 32-byte key for another use of the deployment's shared secret (HKDF-SHA256 of the
   * token's digest, salt `receiptd`, `info` naming the use), so every instance derives the
   * same key, a key reveals nothing about the token, and keys of different uses are
   * independent. Evaluation-key challenges are signed with one (`access/evaluation`).
   */
  deriveKey(info: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.#digest, "receiptd", info, 32));
  }

  /** Whether `presented` (an `X-Internal-Token` header value) is the token. */
  matches(presented: string | string[] | undefined): boolean {
    if (typeof presented !== "string") return false;
    return timingSafeEqual(sha256(presented), this.#digest);
  }
}

function tokenFrom(bytes: Buffer, path: string): InternalToken {
  // Operators write the file with an editor or `echo`; the line ending is not part of it.
  const text = bytes.toString("utf8").replace(/\r?\n$/, "");
  try {
    return new InternalToken(text);
  } catch (error) {
    if (!(error instanceof InternalTokenError)) throw error;
    throw new InternalTokenError(`${path}: ${error.message}`);
  }
}

/**
 * Reads the token file, creating it first when there is none. Created with a hard link (see
 * `createFileOnce`), so of two processes starting together both end up with the same token.
 */
export async function loadOrCreateInternalToken(path: string): Promise<InternalToken> {
  const existing = await readIfPresent(path);
  if (existing !== null) return tokenFrom(existing, path);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString("hex");
  if (await createFileOnce(path, token, 0o600)) return new InternalToken(token);
  const created = await readIfPresent(path);
  if (created === null) throw new InternalTokenError(`${path} vanished while being created`);
  return tokenFrom(created, path);
}
