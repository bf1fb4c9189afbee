/**
 * The page's side of its Web Worker (worker.ts): one verification at a time, with progress,
 * and Cancel, which ends the worker (the only way to stop synchronous work in it).
 *
 * The page works offline once loaded (issue 37), so nothing here may need the network after
 * the load: `startVerifier` fetches the worker's script at load, checks it against the
 * build's SRI hash, and keeps it as a Blob URL; every worker starts from that URL, the first
 * at load and a replacement as soon as Cancel ends one. Were the script fetched when a worker
 * starts, a page taken offline could not verify (nor the one after a Cancel).
 *
 * The page runs under Trusted Types with no policy but this one: it allows exactly the
 * worker's URL, which the build writes in (scripts/build-web.mjs), and the Blob URL made here
 * from its checked bytes, and nothing else (docs/web-page.md, "Offline").
 */
import type { BundleView, VerifyPhase } from "./bundle-view.js";
import type { ReceiptNode } from "./chain-model.js";
import type { WorkerReply, WorkerRequest } from "./worker-protocol.js";

/** `/assets/worker-<hash>.js`, defined by the build. */
declare const RECEIPTD_WORKER_URL: string;
/** The worker script's SRI hash (`sha384-…`), defined by the build. */
declare const RECEIPTD_WORKER_SRI: string;

interface TrustedTypesFactory {
  createPolicy(
    name: string,
    rules: { createScriptURL: (url: string) => string },
  ): { createScriptURL(url: string): unknown };
}

/** The policy's name, as the Content-Security-Policy allows it (endpoints/page/route.ts). */
export const WORKER_POLICY = "receiptd-worker";

let policy: { createScriptURL(url: string): unknown } | null = null;
/** The Blob URL of the worker's checked script, once fetched. */
let heldScript: string | null = null;

function trustedWorkerUrl(url: string): string {
  const factory = (globalThis as { trustedTypes?: TrustedTypesFactory }).trustedTypes;
  if (factory === undefined) return url;
  policy ??= factory.createPolicy(WORKER_POLICY, {
    createScriptURL: (candidate) => {
      if (candidate !== RECEIPTD_WORKER_URL && candidate !== heldScript) {
        throw new TypeError(`not the page's worker: ${candidate}`);
      }
      return candidate;
    },
  });
  // A TrustedScriptURL, which Worker takes where its types say string.
  return policy.createScriptURL(url) as string;
}

let fetching: Promise<string> | null = null;

/**
 * The URL workers start from: the held Blob URL, or, when the script could not be fetched
 * (offline at that moment), the asset's own URL, which the browser may still have in its
 * cache; the fetch is then tried again at the next start.
 */
function workerScript(): Promise<string> {
  if (heldScript !== null) return Promise.resolve(heldScript);
  fetching ??= (async () => {
    try {
      const response = await fetch(RECEIPTD_WORKER_URL, { integrity: RECEIPTD_WORKER_SRI });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      // A JavaScript type, as a module worker requires, whatever the response said.
      const script = new Blob([await response.arrayBuffer()], { type: "text/javascript" });
      heldScript = URL.createObjectURL(script);
      return heldScript;
    } catch {
      return RECEIPTD_WORKER_URL;
    } finally {
      fetching = null;
    }
  })();
  return fetching;
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

type Progress = (phase: VerifyPhase, done: number, total: number) => void;

let requests = 0;
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

/** A worker being started, or started: `ended` once terminated (or given up) by the page. */
interface WorkerSlot {
  started: Promise<Worker | { failed: string }>;
  worker: Worker | null;
  ended: boolean;
}

/** The worker that verifies next (idle) or now; null before the first start and after a crash. */
let slot: WorkerSlot | null = null;

function startWorker(): WorkerSlot {
  const own: WorkerSlot = { started: Promise.resolve({ failed: "" }), worker: null, ended: false };
  own.started = workerScript().then((url) => {
    if (own.ended) return { failed: "the verifier was stopped" };
    try {
      own.worker = new Worker(trustedWorkerUrl(url), { type: "module", name: "receiptd verifier" });
    } catch (error) {
      // A browser without module workers: say so rather than wait for ever.
      return {
        failed: `this browser cannot start the verifier (${error instanceof Error ? error.message : String(error)})`,
      };
    }
    own.worker.onmessage = (event: MessageEvent<WorkerReply>) => {
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
    own.worker.onerror = (event) => {
      event.preventDefault();
      if (slot !== own) return;
      // Not restarted here: a worker that cannot load would start again and again. The next
      // verification starts one (from the held script, so offline too).
      endWorker(own);
      slot = null;
      settle({ type: "failed", message: event.message || "the verifier stopped" });
    };
    return own.worker;
  });
  return own;
}

function endWorker(own: WorkerSlot): void {
  own.ended = true;
  own.worker?.terminate();
}

/** Ends the worker (and the verification it runs), and starts its replacement at once. */
function replaceWorker(): void {
  if (slot !== null) endWorker(slot);
  slot = startWorker();
}

/**
 * Called once at load: fetches the worker's script and starts the first worker, so that a
 * page taken offline afterwards still verifies. Resolves to whether the script is held
 * (false: the fetch failed, and workers start from the asset's URL, needing the network or
 * the browser's cache).
 */
export async function startVerifier(): Promise<boolean> {
  slot ??= startWorker();
  await slot.started;
  return heldScript !== null;
}

/**
 * Verifies in the worker. A verification still running is cancelled first: the page shows
 * only the latest.
 */
export function verifyInWorker(request: VerifyRequest, onProgress: Progress): Verification {
  if (current !== null) {
    replaceWorker();
    settle({ type: "cancelled" });
  }
  const id = ++requests;
  const outcome = new Promise<VerifyOutcome>((resolve) => {
    current = { id, settle: resolve, progress: onProgress, receipts: [] };
  });
  slot ??= startWorker();
  const own = slot;
  void own.started.then((started) => {
    // Cancelled, or replaced by a newer verification, while the worker started.
    if (current?.id !== id || slot !== own) return;
    if ("failed" in started) {
      slot = null;
      settle({ type: "failed", message: started.failed });
      return;
    }
    const message: WorkerRequest = { id, ...request };
    started.postMessage(message);
  });
  return {
    outcome,
    cancel() {
      if (current?.id !== id) return;
      replaceWorker();
      settle({ type: "cancelled" });
    },
  };
}
