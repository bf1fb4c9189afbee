/**
 * What every worker thread of the CPU pool is given once, at start (Piscina `workerData`).
 * Only plain data: each worker opens its own view of the service key from `dataDir`
 * (`ServiceIdentity`), so a rotation reaches the threads without a restart.
 */
import type { VerifierCryptoId } from "../../verifier/crypto/provider.js";

export interface WorkerContext {
  dataDir: string;
  /** The conformance corpus, or null when none is deployed. */
  corpusDir: string | null;
  maxBatch: number;
  /** The result budget of one request (`ServiceLimits.maxResultBytes`). */
  maxResultBytes: number;
  /** The main thread's Ed25519 implementation, which every thread uses too (`worker.ts`). */
  ed25519: VerifierCryptoId;
}
