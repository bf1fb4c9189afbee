/**
 * The page's side of its Web Worker (worker.ts): one verification at a time, with progress,
 * and Cancel, which ends the worker (the only way to stop synchronous work in it); the next
 * verification starts a new one.
 *
 * The page runs under Trusted Types with no policy but this one: it allows exactly the
 * worker's URL, which the build writes in (scripts/build-web.mjs), and nothing else.
 */
import type { BundleView, VerifyPhase } from "./bundle-view.js";
import type { ReceiptNode } from "./chain-model.js";
import type { WorkerReply, WorkerRequest } from "./worker-protocol.js";

/** `/assets/worker-<hash>.js`, defined by the build. */
declare const RECEIPTD_WORKER_URL: string;

interface TrustedTypesFactory {
  createPolicy(
    name: string,
    rules: { createScriptURL: (url: string) => string },
  ): { createScriptURL(url: string): unknown };
}

/** The policy's name, as the Content-Security-Policy allows it (endpoints/page/route.ts). */
export const WORKER_POLICY = "receiptd-worker";

let policy: { createScriptURL(url: string): unknown } | null = null;

function workerUrl(): string {
  const factory = (globalThis as { trustedTypes?: TrustedTypesFactory }).trustedTypes;
  if (factory === undefined) return RECEIPTD_WORKER_URL;
  policy ??= factory.createPolicy(WORKER_POLICY, {
    createScriptURL: (url) => {
      if (url !== RECEIPTD_WORKER_URL) throw new TypeError(`not the page's worker: ${url}`);
      return url;
    },
  });
  // A TrustedScriptURL, which Worker takes where its types say string.
  return policy.createScriptURL(RECEIPTD_WORKER_URL) as string;
}

export interface VerifyRequest {
  bundle: Uint8Array;
  requireAnchor: boolean;
  revocations: { name: string; data: Uint8Array }[];
}

export type VerifyOutcome =
  | { type: "done"; view: BundleView; result: Blob; elapsedMs: number }
  | { type: "failed"; message: string }
  | { type: "cancelled" };

export interface Verification {
  outcome: Promise<VerifyOutcome>;
  cancel(): void;
}

let worker: Worker | null = null;
let requests = 0;
type Progress = (phase: VerifyPhase, done: number, total: number) => void;

let current: {
  id: number;
  settle: (outcome: VerifyOutcome) => void;
  progress: Progress;
  receipts: ReceiptNode[];
} | null = null;

function settle(outcome: VerifyOutcome): void {
  const running = current;
  current = null;
  running?.settle(outcome);
}

function stopWorker(): void {
  worker?.terminate();
  worker = null;
}

/**
 * Verifies in the worker. A verification still running is cancelled first: the page shows
 * only the latest.
 */
export function verifyInWorker(request: VerifyRequest, onProgress: Progress): Verification {
  if (current !== null) {
    stopWorker();
    settle({ type: "cancelled" });
  }
  const id = ++requests;
  if (worker === null) {
    try {
      worker = new Worker(workerUrl(), { type: "module", name: "receiptd verifier" });
    } catch (error) {
      // A browser without module workers: say so rather than wait for ever.
      const message = `this browser cannot start the verifier (${error instanceof Error ? error.message : String(error)})`;
      return { outcome: Promise.resolve({ type: "failed", message }), cancel() {} };
    }
    const own = worker;
    own.onmessage = (event: MessageEvent<WorkerReply>) => {
      const reply = event.data;
      if (current === null || reply.id !== current.id) return;
      if (reply.type === "progress") current.progress(reply.phase, reply.done, reply.total);
      else if (reply.type === "receipts") {
        for (const node of reply.receipts) current.receipts.push(node);
      } else {
        if (reply.type === "done") reply.view.chain.receipts = current.receipts;
        settle(reply);
      }
    };
    own.onerror = (event) => {
      event.preventDefault();
      if (worker === own) stopWorker();
      settle({ type: "failed", message: event.message || "the verifier stopped" });
    };
  }
  const outcome = new Promise<VerifyOutcome>((resolve) => {
    current = { id, settle: resolve, progress: onProgress, receipts: [] };
  });
  const message: WorkerRequest = { id, ...request };
  worker.postMessage(message);
  return {
    outcome,
    cancel() {
      if (current?.id !== id) return;
      stopWorker();
      settle({ type: "cancelled" });
    },
  };
}
