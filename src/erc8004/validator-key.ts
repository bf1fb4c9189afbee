/**
 * The service's secp256k1 validator key (service.md §8): it signs the EIP-712 attestations of
 * `POST /erc8004/validate`, and its address is the `validator_address` published at `/info`.
 * Created in the data directory on first start, readable by the owner only, and reused on
 * every later start, so attestations keep naming the same validator across restarts.
 *
 * The file holds the 32-byte private key as `0x` + 64 lowercase hex digits and a newline,
 * the form wallets and `cast wallet` import.
 *
 * The key is checked and its address derived with @noble/curves, not viem: the web process
 * only publishes the address, and loading viem at startup for it cost about 12 MiB of RSS.
 * The viem account that signs is made on the first signature (`signer()`), on a worker thread.
 */
import { readFileSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1";
import type { Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { type Address, publicKeyToAddress } from "../evm/address.js";
import { loadViemAccounts } from "../evm/viem.js";
import { createFileOnce, readIfPresent } from "../storage/atomic-file.js";
import { codedErrorClass } from "../verifier/coded-error.js";

export const VALIDATOR_KEY_FILE = "validator-key.hex";

const KEY_TEXT = /^0x[0-9a-f]{64}\n?$/;

export type ValidatorKeyErrorCode = "validator_key_invalid";
export class ValidatorKeyError extends codedErrorClass<ValidatorKeyErrorCode>(
  "validator_key_invalid",
) {
  override readonly name = "ValidatorKeyError";
}

/** A loaded validator key: its address at once, the account that signs with it on demand. */
export interface ValidatorKey {
  /** The EIP-55 address of the key (`validator_address`). */
  readonly address: Address;
  /** The viem account for the key, made (and viem loaded) on the first call. */
  signer(): Promise<PrivateKeyAccount>;
}

export function validatorKeyPath(dataDir: string): string {
  return join(dataDir, VALIDATOR_KEY_FILE);
}

/** The key an operator or a first start wrote; anything else stops startup, never replaced. */
export function validatorKeyFromText(text: string, path: string): ValidatorKey {
  if (!KEY_TEXT.test(text)) {
    throw new ValidatorKeyError(`${path} does not hold 0x + 64 lowercase hex digits`);
  }
  const privateKey = text.trimEnd() as Hex;
  let publicKey: Uint8Array;
  try {
    publicKey = secp256k1.getPublicKey(privateKey.slice(2), false);
  } catch {
    // Out of the curve's scalar range (zero, or at least the group order).
    throw new ValidatorKeyError(`${path} is not a valid secp256k1 private key`);
  }
  const address = publicKeyToAddress(publicKey);
  let account: Promise<PrivateKeyAccount> | undefined;
  return {
    address,
    signer() {
      account ??= loadViemAccounts().then(({ privateKeyToAccount }) => {
        const made = privateKeyToAccount(privateKey);
        // The address published at /info must be the one that signs.
        if (made.address !== address) throw new Error("validator address derivation differs");
        return made;
      });
      return account;
    },
  };
}

/**
 * A new private key: 32 bytes, uniform in the scalar range [1, n − 1] (what viem's
 * `generatePrivateKey` returns: noble's `randomPrivateKey`, as lowercase hex).
 */
function generatePrivateKey(): Hex {
  return `0x${Buffer.from(secp256k1.utils.randomPrivateKey()).toString("hex")}`;
}

/**
 * Loads `<dataDir>/validator-key.hex`, creating it (mode 0600) when it does not exist yet.
 * Created with a hard link, not a rename (`createFileOnce`), so when `web` and `worker` start
 * together the second reads the first one's key instead of replacing it.
 */
export async function loadOrCreateValidatorKey(dataDir: string): Promise<ValidatorKey> {
  const path = validatorKeyPath(dataDir);
  const existing = await readIfPresent(path);
  if (existing !== null) return validatorKeyFromText(existing.toString("utf8"), path);

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const text = `${generatePrivateKey()}\n`;
  if (await createFileOnce(path, text, 0o600)) return validatorKeyFromText(text, path);
  return validatorKeyFromText(await readFile(path, "utf8"), path);
}

/**
 * Opens the key a started service already created, synchronously: worker threads load it
 * once, on their first attestation.
 */
export function openValidatorKey(dataDir: string): ValidatorKey {
  const path = validatorKeyPath(dataDir);
  return validatorKeyFromText(readFileSync(path, "utf8"), path);
}
