/** `POST /verify-receipt` (service.md §1): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { workerRoute } from "../operation.js";
import { verifyReceiptOperation, verifyReceiptTask } from "./contract.js";

export async function verifyReceiptRoutes(app: FastifyInstance) {
  workerRoute(app, verifyReceiptOperation, verifyReceiptTask, (body) => ({ body }));
}
