/** `POST /verify-anchor` (service.md §1): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { workerRoute } from "../operation.js";
import { verifyAnchorOperation, verifyAnchorTask } from "./contract.js";

export async function verifyAnchorRoutes(app: FastifyInstance) {
  workerRoute(app, verifyAnchorOperation, verifyAnchorTask, (body) => ({ body }));
}
