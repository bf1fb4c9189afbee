/**
 * The Ed25519 implementation as the startup lines (`receiptd serve`, `receiptd worker`) name
 * it. Where sodium-native could not be used the line says so and why, so an operator sees the
 * slower path without looking for it.
 */
import { platformCryptoProblem } from "../verifier/crypto/platform.js";
import { type VerifierCryptoId, verifierCrypto } from "../verifier/crypto/provider.js";

/** `libsodium`, or `openssl: <why sodium-native is not in use>`. */
export function ed25519Summary(
  id: VerifierCryptoId = verifierCrypto().id,
  problem: string | null = platformCryptoProblem,
): string {
  return id === "openssl" && problem !== null ? `openssl: ${problem}` : id;
}
