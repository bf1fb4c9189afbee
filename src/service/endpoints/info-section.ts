/**
 * An endpoint's section of `GET /info` (service.md §11), published by the endpoint's
 * `contract.ts`. `/info` (meta/info.ts) reads the sections from the contracts and never
 * imports a route or an answer module, so endpoint folders meet only through their contracts
 * (issue 37, item 6). A section is built per request: some of it (the issuer, the evaluation
 * keys' current difficulty) changes while the service runs.
 */
import type { FastifyInstance } from "fastify";

export type InfoSection<Section> = (app: FastifyInstance) => Section | Promise<Section>;
