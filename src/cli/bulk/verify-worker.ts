/**
 * A worker thread of `receiptd verify` in bulk (local mode): verifies a chunk of bundles
 * with the library and answers with their finished output lines and counts, so the main
 * thread only reads inputs and writes text.
 */
import { parentPort } from "node:worker_threads";
import { verifyBundleBytes } from "../../verifier/bundle/verify-document.js";
import { emptyTally, resultLine, type Tally } from "./lines.js";

export interface ChunkRequest {
  id: number;
  sources: string[];
  /** The bundles one after another, `lengths` long each (the buffer may hold more). */
  joined: Uint8Array<ArrayBuffer>;
  lengths: number[];
  requireAnchor: boolean;
  full: boolean;
}

export interface ChunkAnswer {
  id: number;
  text: string;
  tally: Tally;
  /** The request's buffer, moved back for the next chunk. */
  joined: Uint8Array<ArrayBuffer>;
}

parentPort?.on("message", (request: ChunkRequest) => {
  const tally = emptyTally();
  let text = "";
  let offset = 0;
  for (let at = 0; at < request.sources.length; at += 1) {
    const length = request.lengths[at] as number;
    const bundle = request.joined.subarray(offset, offset + length);
    offset += length;
    const result = verifyBundleBytes(bundle, {
      requireAnchor: request.requireAnchor,
      universalNewlines: true,
    });
    text += resultLine(request.sources[at] as string, result, request.full, tally);
  }
  const answer: ChunkAnswer = { id: request.id, text, tally, joined: request.joined };
  // Moved, not left here: a buffer that arrived with each chunk and stayed was garbage only
  // a full collection frees, and the worker's old generation rarely runs one (up to 22 MiB
  // of dead chunks per worker at the peak). The main thread hands it out again.
  parentPort?.postMessage(answer, [request.joined.buffer]);
});
