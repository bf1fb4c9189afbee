/**
 * The page's Web Worker (a second script asset, `assets/worker-<hash>.js`): verifies a
 * bundle off the page's thread, so that a bundle of any size the page accepts never holds up
 * scrolling, typing or Cancel (issue 25). It runs the same `verifyBundleJson` as the page
 * and `window.receiptd`, so the text it returns is the CLI's, byte for byte.
 *
 * The full result goes back as a Blob (for the download), so the page's thread never holds
 * the megabytes of a large result as a string it would have to copy.
 */
import { verifyBundleView } from "./bundle-view.js";
import type { WorkerReply, WorkerRequest } from "./worker-protocol.js";

/** The worker's global, as far as it is used (src/web is type-checked against the DOM). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: WorkerReply): void;
}

const scope = self as unknown as WorkerScope;

/** At most this often a progress message, so that they never flood the page's thread. */
const PROGRESS_INTERVAL_MS = 100;
/** Receipts per message: a few milliseconds to read on the page's thread. */
const RECEIPTS_PER_MESSAGE = 200;

scope.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const { id, bundle, requireAnchor, revocations } = event.data;
  const post = (reply: WorkerReply) => scope.postMessage(reply);
  let last = 0;
  try {
    const started = performance.now();
    const { text, view } = verifyBundleView(
      bundle,
      { requireAnchor, revocations },
      (phase, done, total) => {
        const now = performance.now();
        if (done !== 0 && done !== total && now - last < PROGRESS_INTERVAL_MS) return;
        last = now;
        post({ id, type: "progress", phase, done, total });
      },
    );
    const elapsedMs = performance.now() - started;
    const receipts = view.chain.receipts;
    for (let from = 0; from < receipts.length; from += RECEIPTS_PER_MESSAGE) {
      post({ id, type: "receipts", receipts: receipts.slice(from, from + RECEIPTS_PER_MESSAGE) });
    }
    view.chain.receipts = [];
    post({
      id,
      type: "done",
      view,
      result: new Blob([text], { type: "application/json" }),
      elapsedMs,
    });
  } catch (error) {
    post({ id, type: "failed", message: error instanceof Error ? error.message : String(error) });
  }
};
