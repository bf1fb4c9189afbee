/** The messages between the page (verify-client.ts) and its Web Worker (worker.ts). */
import type { BundleView, VerifyPhase } from "./bundle-view.js";
import type { ReceiptNode } from "./chain-model.js";

export interface WorkerRequest {
  id: number;
  bundle: Uint8Array;
  requireAnchor: boolean;
  revocations: { name: string; data: Uint8Array }[];
}

export type WorkerReply =
  | { id: number; type: "progress"; phase: VerifyPhase; done: number; total: number }
  /**
   * The chain's receipts come in parts before "done" (whose `view.chain.receipts` is empty):
   * each message is a task on the page's thread, and one of 10,000 receipts would be long.
   */
  | { id: number; type: "receipts"; receipts: ReceiptNode[] }
  | { id: number; type: "done"; view: BundleView; result: Blob; elapsedMs: number }
  | { id: number; type: "failed"; message: string };
