/** `POST /erc8004/validate` (service.md §5): the body goes, unparsed, to a worker that answers it. */
import type { FastifyInstance } from "fastify";
import { authorisedUnits } from "../../plugins/access.js";
import { workerRoute } from "../operation.js";
import { validateErc8004Operation, validateTask } from "./contract.js";

export async function erc8004Routes(app: FastifyInstance) {
  workerRoute(app, validateErc8004Operation, validateTask, (body, request) => ({
    body,
    authorisedUnits: authorisedUnits(request),
  }));
}
