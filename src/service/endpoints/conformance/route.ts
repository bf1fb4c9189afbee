/**
 * `POST /conformance` (service.md §10): the conformance referee. The submission goes,
 * unparsed, to a worker that grades it against the corpus and signs the report.
 */
import type { FastifyInstance } from "fastify";
import { workerRoute } from "../operation.js";
import { conformanceTask, gradeConformanceOperation } from "./contract.js";

export async function conformanceRoutes(app: FastifyInstance) {
  workerRoute(app, gradeConformanceOperation, conformanceTask, (body) => ({ body }));
}
