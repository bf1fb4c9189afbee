/**
 * The service's Ed25519 signing key (service.md §8): created in the data directory on first
 * start, readable by the owner only, and reused on every later start so that receipts signed
 * before a restart keep naming a live issuer.
 *
 * `receiptd rotate-key` replaces the key file while servers run. Every holder of the key (the
 * main thread, each worker thread, each process) goes through a `ServiceIdentity`, which
 * notices a replaced file within `KEY_REFRESH_MS` and switches to the new key without a
 * restart.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createFileOnce, readIfPresent } from "../storage/atomic-file.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { type Ed25519Signer, signerFromPrivateKey } from "../verifier/crypto/ed25519.js";

export const SERVICE_KEY_FILE = "service-key.pem";

/** How stale a holder's view of the key file may be; rotation waits longer than this. */
export const KEY_REFRESH_MS = 1000;

export type ServiceKeyErrorCode = "service_key_invalid";
export class ServiceKeyError extends codedErrorClass<ServiceKeyErrorCode>("service_key_invalid") {
  override readonly name = "ServiceKeyError";
}

export function serviceKeyPath(dataDir: string): string {
  return join(dataDir, SERVICE_KEY_FILE);
}

export function signerFromPem(pem: string, path: string): Ed25519Signer {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new ServiceKeyError(`${path} is not a PEM private key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new ServiceKeyError(`${path} holds a ${key.asymmetricKeyType} key, not Ed25519`);
  }
  return signerFromPrivateKey(key);
}

/** A fresh Ed25519 key as PKCS#8 PEM, the key file's format. */
export function generateServiceKeyPem(): string {
  const { privateKey } = generateKeyPairSync("ed25519");
  return privateKey.export({ format: "pem", type: "pkcs8" }).toString();
}

/**
 * Loads `<dataDir>/service-key.pem`, creating it (mode 0600) when it does not exist yet. The
 * file is created with a hard link, not a rename, so when `web` and `worker` start together
 * the second reads the first one's key instead of replacing it.
 */
export async function loadOrCreateServiceKey(dataDir: string): Promise<Ed25519Signer> {
  const path = serviceKeyPath(dataDir);
  const existing = await readIfPresent(path);
  if (existing !== null) return signerFromPem(existing.toString("utf8"), path);

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const pem = generateServiceKeyPem();
  if (await createFileOnce(path, pem, 0o600)) return signerFromPem(pem, path);
  return signerFromPem(await readFile(path, "utf8"), path);
}

/** The file's identity: a rotation replaces it by rename, which changes the inode. */
function fileVersion(path: string): string {
  const stats = statSync(path, { bigint: true });
  return `${stats.ino}:${stats.mtimeNs}:${stats.size}`;
}

/**
 * The current signing key of a data directory, as seen by one holder. `signer()` is
 * synchronous (it sits on the receipt-signing path); it re-checks the file at most once per
 * `KEY_REFRESH_MS` and reloads it when it was replaced.
 */
export class ServiceIdentity {
  readonly #path: string;
  readonly #now: () => number;
  #signer: Ed25519Signer;
  #version: string;
  #checkedAt: number;

  private constructor(path: string, now: () => number) {
    this.#path = path;
    this.#now = now;
    this.#version = fileVersion(path);
    this.#signer = signerFromPem(readFileSync(path, "utf8"), path);
    this.#checkedAt = now();
  }

  /** Opens an existing key file (see `loadOrCreateServiceKey` for creating it). */
  static open(dataDir: string, now: () => number = Date.now): ServiceIdentity {
    return new ServiceIdentity(serviceKeyPath(dataDir), now);
  }

  signer(): Ed25519Signer {
    const now = this.#now();
    if (now - this.#checkedAt >= KEY_REFRESH_MS) {
      this.#checkedAt = now;
      this.#reloadIfReplaced();
    }
    return this.#signer;
  }

  #reloadIfReplaced(): void {
    try {
      const version = fileVersion(this.#path);
      if (version === this.#version) return;
      this.#signer = signerFromPem(readFileSync(this.#path, "utf8"), this.#path);
      this.#version = version;
    } catch {
      // A key file caught mid-replacement or unreadable for a moment: keep signing with the
      // key we have and look again at the next interval, rather than failing requests.
    }
  }
}
