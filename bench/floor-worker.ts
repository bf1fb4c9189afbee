/**
 * A worker thread of the floor server (floor-server.ts): the service's own `POST /verify`
 * answer, given a batch of bodies per message, as the CPU pool's worker gets them.
 */
import { parentPort } from "node:worker_threads";
import { DEFAULT_LIMITS } from "../src/service/config.js";
import { answerVerifyRequest } from "../src/service/verification/answer.js";
import { generateSigner } from "../src/verifier/crypto/ed25519.js";

export interface FloorBatch {
  bodies: ArrayBuffer[];
}

export interface FloorAnswer {
  statusCode: number;
  json: string;
}

const port = parentPort;
if (port === null) throw new Error("floor-worker.ts runs only as a worker thread");

// receiptd's default limits; the floor never signs a receipt.
const signer = generateSigner();
const { maxBatch, maxResultBytes } = DEFAULT_LIMITS;
const context = { maxBatch, maxResultBytes, signer: () => signer };
const flags = { requireAnchor: false, receipt: false };

port.on("message", ({ bodies }: FloorBatch) => {
  const answers = bodies.map((body): FloorAnswer => {
    const outcome = answerVerifyRequest(new Uint8Array(body), flags, context);
    if (!("json" in outcome)) throw new Error("the floor asks for no cacheable verdicts");
    // answerVerifyRequest answers text; only receiptd's own worker moves it out as bytes.
    const json =
      typeof outcome.json === "string" ? outcome.json : Buffer.from(outcome.json).toString();
    return { statusCode: outcome.statusCode, json };
  });
  port.postMessage(answers);
});
