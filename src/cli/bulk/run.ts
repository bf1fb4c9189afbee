/**
 * `receiptd verify` over many inputs (docs/cli.md, "Verify in bulk"): files, directories,
 * NDJSON streams; locally on worker threads (one per core) with the library, or against a
 * service with the client (`--remote`). One NDJSON line per input, in input order, to stdout
 * or `--out`; `--resume` skips what `--out` already holds. Exit 0 only when every bundle is
 * TRUSTED, 1 when some is not, 2 for a usage error, an unreadable input or a run the service
 * refused to finish.
 */
import { availableParallelism } from "node:os";
import type { Readable } from "node:stream";
import { Worker } from "node:worker_threads";
import { ReceiptdError } from "../../client/errors.js";
import { bundleTooLarge } from "../../verifier/bundle/limits.js";
import { codedErrorClass } from "../../verifier/coded-error.js";
import type { CliIo } from "../entry.js";
import { type BulkInput, bulkInputs, countInputs } from "./inputs.js";
import { addTally, emptyTally, failureLine, resultLine, type Tally } from "./lines.js";
import { fileSink, type LineSink, resumePoint, streamSink } from "./output.js";
import { type Progress, startProgress } from "./progress.js";
import type { ChunkAnswer, ChunkRequest } from "./verify-worker.js";

export interface BulkRequest {
  inputs: string[];
  ndjson: boolean;
  /** Worker threads (local) or batch requests in flight (remote). */
  jobs: number | null;
  remote: string | null;
  key: string | null;
  out: string | null;
  resume: boolean;
  requireAnchor: boolean;
  summary: boolean;
  full: boolean;
}

export interface BulkStreams {
  stdin: Readable;
  stdout: NodeJS.WritableStream & { write: NodeJS.WriteStream["write"] };
  stderr: NodeJS.WriteStream;
}

/** A chunk sent to a worker: this many bundles, or this many bytes, whichever comes first. */
const CHUNK_ITEMS = 64;
const CHUNK_BYTES = 1 << 20;
/** Chunks waiting or running per worker: enough to keep it busy, few enough to bound memory. */
const CHUNKS_PER_WORKER = 3;
const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");
/**
 * V8 lets each isolate's young generation grow to tens of MB; with a thread per core that was
 * most of the CLI's peak RSS, and a verification's garbage is short-lived, so a small nursery
 * costs no measurable rate (bench:bulk, bulk-rss and bulk-local).
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/** `--out` holds lines of other inputs than these: exit 2, nothing written. */
class ResumeMismatch extends codedErrorClass("resume_mismatch") {}

/** The inputs after the first `skip`; the last skipped one must be `lastSource`. */
async function* skipDone(
  inputs: AsyncGenerator<BulkInput>,
  skip: number,
  lastSource: string | null,
): AsyncGenerator<BulkInput> {
  let seen = 0;
  for await (const input of inputs) {
    seen += 1;
    if (seen < skip) continue;
    if (seen === skip) {
      if (input.source !== lastSource) {
        throw new ResumeMismatch(
          `--out does not belong to these inputs: line ${skip} is ${JSON.stringify(lastSource)}, input ${skip} is ${JSON.stringify(input.source)}`,
        );
      }
      continue;
    }
    yield input;
  }
  if (seen < skip) {
    throw new ResumeMismatch(`--out holds ${skip} lines but there are only ${seen} inputs`);
  }
}

/** The line of an input that never reaches the verifier. */
export function earlyLine(input: BulkInput, tally: Tally): string | null {
  if ("unreadable" in input)
    return failureLine(input.source, `unreadable: ${input.unreadable}`, tally);
  if ("tooLarge" in input) {
    return resultLine(input.source, bundleTooLarge(input.tooLarge), false, tally);
  }
  return null;
}

export interface RunState {
  tally: Tally;
  done: number;
  progress: Progress;
}

/**
 * The buffers chunks travel in, moved to a worker and back: at most one per chunk in flight
 * and one being filled, so the bytes waiting for a worker stay bounded and are never garbage.
 */
class ChunkBuffers {
  readonly #free: Uint8Array<ArrayBuffer>[] = [];

  take(): Uint8Array<ArrayBuffer> {
    return this.#free.pop() ?? new Uint8Array(CHUNK_BYTES);
  }

  /** A buffer back from a worker; one made for a single large bundle is let go. */
  give(buffer: Uint8Array<ArrayBuffer>): void {
    if (buffer.length === CHUNK_BYTES) this.#free.push(buffer);
  }
}

/** Bundles copied one after another into a buffer, with their sources and lengths. */
interface Chunk {
  buffer: Uint8Array<ArrayBuffer>;
  sources: string[];
  lengths: number[];
  bytes: number;
}

async function runLocal(
  request: BulkRequest,
  inputs: AsyncGenerator<BulkInput>,
  sink: LineSink,
  state: RunState,
): Promise<void> {
  const jobs = request.jobs ?? availableParallelism();
  const workerUrl = new URL(
    `./verify-worker.${RUNNING_FROM_SOURCE ? "ts" : "js"}`,
    import.meta.url,
  );
  const workers = Array.from({ length: jobs }, () =>
    RUNNING_FROM_SOURCE
      ? // From source (tests, development) the worker registers tsx first (found from
        // here, not from the cwd), then imports the module.
        new Worker(
          `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})` +
            `.then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}); })`,
          { eval: true, resourceLimits: WORKER_LIMITS },
        )
      : new Worker(workerUrl, { resourceLimits: WORKER_LIMITS }),
  );
  const buffers = new ChunkBuffers();
  const load = new Map<Worker, number>(workers.map((worker) => [worker, 0]));
  /** Finished chunks waiting for their turn, by id. */
  const finished = new Map<number, { text: string; tally: Tally; count: number }>();
  const counts = new Map<number, number>();
  let nextToWrite = 0;
  let nextId = 0;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const signal = () => {
    wake?.();
    wake = null;
  };
  for (const worker of workers) {
    worker.on("message", (answer: ChunkAnswer) => {
      load.set(worker, (load.get(worker) ?? 1) - 1);
      buffers.give(answer.joined);
      finished.set(answer.id, {
        text: answer.text,
        tally: answer.tally,
        count: counts.get(answer.id) ?? 0,
      });
      counts.delete(answer.id);
      signal();
    });
    worker.on("error", (error) => {
      failure = error;
      signal();
    });
  }
  let writing = Promise.resolve();
  const flush = () => {
    let text = "";
    let lines = 0;
    const tally = emptyTally();
    for (
      let chunk = finished.get(nextToWrite);
      chunk !== undefined;
      chunk = finished.get(nextToWrite)
    ) {
      finished.delete(nextToWrite);
      nextToWrite += 1;
      text += chunk.text;
      lines += chunk.count;
      addTally(tally, chunk.tally);
    }
    if (text === "") return;
    writing = writing.then(async () => {
      await sink.write(text);
      state.done += lines;
      addTally(state.tally, tally);
      state.progress.update(state.done, state.tally);
    });
  };
  /** Waits until `more` chunks may be outstanding, writing finished ones as they come. */
  const settle = async (room: number) => {
    for (;;) {
      if (failure !== null) throw failure;
      flush();
      if (nextId - nextToWrite <= room) break;
      if (!finished.has(nextToWrite)) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    }
    // The destination's pace holds the reading back too.
    await writing;
  };
  const waitForRoom = () => settle(jobs * CHUNKS_PER_WORKER - 1);
  const send = (chunk: Chunk) => {
    const id = nextId++;
    counts.set(id, chunk.sources.length);
    let target = workers[0] as Worker;
    for (const worker of workers) {
      if ((load.get(worker) ?? 0) < (load.get(target) ?? 0)) target = worker;
    }
    load.set(target, (load.get(target) ?? 0) + 1);
    const message: ChunkRequest = {
      id,
      sources: chunk.sources,
      joined: chunk.buffer,
      lengths: chunk.lengths,
      requireAnchor: request.requireAnchor,
      full: request.full,
    };
    target.postMessage(message, [chunk.buffer.buffer]);
  };
  try {
    let chunk: Chunk | null = null;
    const sendPending = async () => {
      if (chunk === null) return;
      const full = chunk;
      chunk = null;
      await waitForRoom();
      send(full);
    };
    for await (const input of inputs) {
      if ("bytes" in input) {
        const length = input.bytes.length;
        if (chunk !== null && chunk.bytes + length > chunk.buffer.length) await sendPending();
        // Copied at once into the chunk's own buffer: the line is a view into a read of the
        // input, which is then garbage young (a view kept until the chunk left, or posted
        // as it is, held the whole read).
        chunk ??= {
          buffer: length > CHUNK_BYTES ? new Uint8Array(length) : buffers.take(),
          sources: [],
          lengths: [],
          bytes: 0,
        };
        chunk.buffer.set(input.bytes, chunk.bytes);
        chunk.bytes += length;
        chunk.sources.push(input.source);
        chunk.lengths.push(length);
        if (chunk.sources.length >= CHUNK_ITEMS || chunk.bytes >= chunk.buffer.length) {
          await sendPending();
        }
        continue;
      }
      await sendPending();
      await waitForRoom();
      const tally = emptyTally();
      const text = earlyLine(input, tally) ?? "";
      finished.set(nextId++, { text, tally, count: 1 });
      flush();
    }
    await sendPending();
    await settle(0);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

function summaryText(state: RunState, resumed: number, elapsedMs: number): string {
  const topCodes = Object.entries(state.tally.codes)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 10);
  const verified = state.done - resumed;
  return `${JSON.stringify({
    total: state.done,
    resumed,
    verdicts: state.tally.verdicts,
    unreadable: state.tally.unreadable,
    top_error_codes: Object.fromEntries(topCodes),
    elapsed_s: Math.round(elapsedMs) / 1000,
    bundles_per_s: elapsedMs > 0 ? Math.round((verified * 1000) / elapsedMs) : 0,
  })}\n`;
}

export async function runBulk(
  request: BulkRequest,
  io: CliIo,
  streams: BulkStreams,
): Promise<number> {
  const startedAt = performance.now();
  const point =
    request.resume && request.out !== null
      ? await resumePoint(request.out)
      : { lines: 0, lastSource: null, tally: emptyTally() };
  const sink =
    request.out === null
      ? streamSink(streams.stdout as unknown as import("node:stream").Writable)
      : await fileSink(request.out, request.resume);
  const total = streams.stderr.isTTY ? await countInputs(request.inputs, request) : null;
  const state: RunState = {
    tally: point.tally,
    done: point.lines,
    progress: await startProgress(streams.stderr, total, startedAt, point.lines),
  };
  let inputs = bulkInputs(request.inputs, { ndjson: request.ndjson, stdin: streams.stdin });
  if (point.lines > 0) inputs = skipDone(inputs, point.lines, point.lastSource);
  let failed: string | null = null;
  try {
    if (request.remote === null) await runLocal(request, inputs, sink, state);
    else await (await import("./remote.js")).runRemote(request, inputs, sink, state);
  } catch (error) {
    if (error instanceof ResumeMismatch) failed = error.message;
    else if (error instanceof ReceiptdError)
      failed = `the service stopped the run: ${error.message}`;
    else throw error;
  } finally {
    state.progress.stop();
    await sink.close();
  }
  if (request.summary) {
    const text = summaryText(state, point.lines, performance.now() - startedAt);
    // stdout carries the lines unless they go to --out.
    if (request.out === null) io.stderr(text);
    else io.stdout(text);
  }
  if (failed !== null) {
    io.stderr(`error: ${failed}\n`);
    return 2;
  }
  if (state.done === 0) {
    io.stderr(
      "error: no inputs (a directory is searched for *.json, *.ndjson/*.jsonl with --ndjson)\n",
    );
    return 2;
  }
  if (state.tally.unreadable > 0) return 2;
  return (state.tally.verdicts.TRUSTED ?? 0) === state.done ? 0 : 1;
}
