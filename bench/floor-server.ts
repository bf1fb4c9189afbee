/**
 * The floor: what a verification service can reach on this machine with this verifier and
 * this design (a main thread for HTTP, one worker thread per core for the work). Bare
 * node:http, and worker threads running the service's own `POST /verify` answer
 * (`answerVerifyRequest`: strict parsing, verification, the verdict's JSON), with waiting
 * bodies sent up to 16 per message, as the CPU pool sends them. No Fastify, authentication,
 * caps, audit, logs, metrics or limits on connections.
 *
 * `npm run bench` drives it next to receiptd (run.ts, `floor` scenarios): what separates
 * receiptd from the floor is the service layer; what separates the floor from the crypto
 * ceiling is the verifier's own work besides Ed25519 and the hand-off between threads.
 *
 *   node dist/bench/floor-server.js PORT THREADS   (prints nothing; GET /health is 200)
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Worker } from "node:worker_threads";
import { cpuWorkerResourceLimits } from "../src/service/cpu-pool.js";
import { transferableBody } from "../src/service/plugins/raw-body.js";
import type { FloorAnswer, FloorBatch } from "./floor-worker.js";

const MAX_BODIES_PER_MESSAGE = 16;

interface Waiting {
  body: ArrayBuffer;
  reply: (answer: FloorAnswer) => void;
}

interface FloorThread {
  worker: Worker;
  inFlight: Waiting[] | null;
}

const [portText = "0", threadsText = "2"] = process.argv.slice(2);
const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");
const workerUrl = new URL(`./floor-worker.${RUNNING_FROM_SOURCE ? "ts" : "js"}`, import.meta.url);
// Under tsx (tests) a worker's entry cannot be TypeScript: it registers tsx, then imports.
const workerEntry = RUNNING_FROM_SOURCE
  ? `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
      .then((tsx) => tsx.register())
      .then(() => import(${JSON.stringify(workerUrl.href)}))`
  : `import(${JSON.stringify(workerUrl.href)})`;
const queue: Waiting[] = [];

function dispatch(thread: FloorThread): void {
  if (thread.inFlight !== null || queue.length === 0) return;
  const batch = queue.splice(0, MAX_BODIES_PER_MESSAGE);
  thread.inFlight = batch;
  const bodies = batch.map((item) => item.body);
  thread.worker.postMessage({ bodies } satisfies FloorBatch, bodies);
}

const threads: FloorThread[] = Array.from({ length: Number(threadsText) }, () => {
  const thread: FloorThread = {
    // The heap receiptd's CPU pool gives its threads.
    worker: new Worker(workerEntry, { eval: true, resourceLimits: cpuWorkerResourceLimits() }),
    inFlight: null,
  };
  thread.worker.on("message", (answers: FloorAnswer[]) => {
    const batch = thread.inFlight ?? [];
    thread.inFlight = null;
    for (const [i, item] of batch.entries()) item.reply(answers[i]!);
    dispatch(thread);
  });
  thread.worker.on("error", (error) => {
    console.error(error);
    process.exit(1);
  });
  return thread;
});

function send(response: ServerResponse, { statusCode, json }: FloorAnswer): void {
  response.writeHead(statusCode, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
  });
  response.end(json);
}

function handle(request: IncomingMessage, response: ServerResponse): void {
  if (request.method === "GET" && request.url === "/health") {
    send(response, { statusCode: 200, json: '{"ok":true}' });
    return;
  }
  if (request.method !== "POST" || request.url !== "/verify") {
    send(response, { statusCode: 404, json: '{"error":"not_found"}' });
    return;
  }
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    // Moved to the worker, not copied, as receiptd moves its bodies.
    const body = transferableBody(Buffer.concat(chunks));
    queue.push({ body, reply: (answer) => send(response, answer) });
    for (const thread of threads) dispatch(thread);
  });
}

createServer(handle).listen(Number(portText), "127.0.0.1");
process.on("SIGTERM", () => process.exit(0));
