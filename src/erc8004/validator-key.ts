/**
 * The service's secp256k1 validator key (service.md §8): it signs the EIP-712 attestations of
 * `POST /erc8004/validate`, and its address is the `validator_address` published at `/info`.
 * Created in the data directory on first start, readable by the owner only, and reused on
 * every later start, so attestations keep naming the same validator across restarts.
 *
 * The file holds the 32-byte private key as `0x` + 64 lowercase hex digits and a newline,
 * the form wallets and `cast wallet` import.
 */
import { readFileSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createFileOnce, readIfPresent } from "../storage/atomic-file.js";

export const VALIDATOR_KEY_FILE = "validator-key.hex";

const KEY_TEXT = /^0x[0-9a-f]{64}\n?$/;

export class ValidatorKeyError extends Error {
  override readonly name = "ValidatorKeyError";
}

export function validatorKeyPath(dataDir: string): string {
  return join(dataDir, VALIDATOR_KEY_FILE);
}

/** The key an operator or a first start wrote; anything else stops startup, never replaced. */
export function accountFromKeyText(text: string, path: string): PrivateKeyAccount {
  if (!KEY_TEXT.test(text)) {
    throw new ValidatorKeyError(`${path} does not hold 0x + 64 lowercase hex digits`);
  }
  try {
    return privateKeyToAccount(text.trimEnd() as Hex);
  } catch {
    // Out of the curve's scalar range (zero, or at least the group order).
    throw new ValidatorKeyError(`${path} is not a valid secp256k1 private key`);
  }
}

/**
 * Loads `<dataDir>/validator-key.hex`, creating it (mode 0600) when it does not exist yet.
 * Created with a hard link, not a rename (`createFileOnce`), so when `web` and `worker` start
 * together the second reads the first one's key instead of replacing it.
 */
export async function loadOrCreateValidatorKey(dataDir: string): Promise<PrivateKeyAccount> {
  const path = validatorKeyPath(dataDir);
  const existing = await readIfPresent(path);
  if (existing !== null) return accountFromKeyText(existing.toString("utf8"), path);

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const text = `${generatePrivateKey()}\n`;
  if (await createFileOnce(path, text, 0o600)) return accountFromKeyText(text, path);
  return accountFromKeyText(await readFile(path, "utf8"), path);
}

/**
 * Opens the key a started service already created, synchronously: worker threads load it
 * once, on their first attestation.
 */
export function openValidatorKey(dataDir: string): PrivateKeyAccount {
  const path = validatorKeyPath(dataDir);
  return accountFromKeyText(readFileSync(path, "utf8"), path);
}
