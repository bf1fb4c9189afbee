/**
 * viem, loaded on first use. At startup it costs the web process about 12 MiB of RSS and
 * 1,700 modules, for work it may never do: EIP-712 hashing, signing and recovery happen only
 * when an x402 payment is verified or an ERC-8004 attestation is signed (on a worker thread).
 * What startup does need (checksums, the validator key's address) is in `address.ts`.
 *
 * Each promise is made once per thread, so later calls cost one resolved `await`. Take types
 * from viem with `import type`, which costs nothing at run time.
 */
type Viem = typeof import("viem");
type ViemAccounts = typeof import("viem/accounts");

let viem: Promise<Viem> | undefined;
let viemAccounts: Promise<ViemAccounts> | undefined;

/** `viem`'s main entry (`hashTypedData`, `recoverAddress`, …). */
export function loadViem(): Promise<Viem> {
  viem ??= import("viem");
  return viem;
}

/** `viem/accounts` (`privateKeyToAccount`). */
export function loadViemAccounts(): Promise<ViemAccounts> {
  viemAccounts ??= import("viem/accounts");
  return viemAccounts;
}
