/**
 * Every endpoint plugin, one line each: `buildApp` registers them all after the platform.
 * Adding an endpoint is its folder (`contract.ts`, `route.ts`, and `worker.ts` + `answer.ts`
 * when it has CPU work) plus one line here (docs/service-layout.md).
 */
import type { FastifyInstance } from "fastify";
import { anchorRoutes } from "./anchors/route.js";
import { verifyAnchorRoutes } from "./anchors/verify-anchor-route.js";
import { conformanceRoutes } from "./conformance/route.js";
import { crystalRoutes } from "./crystals/route.js";
import { erc8004Routes } from "./erc8004/route.js";
import { evaluationKeyRoutes } from "./evaluation-keys/route.js";
import { mcpRoutes } from "./mcp/route.js";
import { healthRoutes } from "./meta/health.js";
import { infoRoutes } from "./meta/info.js";
import { openApiRoutes } from "./meta/openapi.js";
import { notarizeRoutes } from "./notarize/route.js";
import { pageRoutes } from "./page/route.js";
import { revocationRoutes } from "./revocations/route.js";
import { receiptRoutes } from "./settlements/receipts-route.js";
import { paymentReceiptRoutes } from "./settlements/route.js";
import { verifyRoutes } from "./verify/route.js";
import { verifyReceiptRoutes } from "./verify-receipt/route.js";

/** In registration order, which is the order of `/openapi.json`'s paths. */
export const ENDPOINTS: readonly ((app: FastifyInstance) => Promise<void>)[] = [
  openApiRoutes,
  healthRoutes,
  infoRoutes,
  revocationRoutes,
  mcpRoutes,
  verifyRoutes,
  verifyAnchorRoutes,
  anchorRoutes,
  notarizeRoutes,
  verifyReceiptRoutes,
  conformanceRoutes,
  paymentReceiptRoutes,
  receiptRoutes,
  erc8004Routes,
  crystalRoutes,
  evaluationKeyRoutes,
  pageRoutes,
];

/** All endpoints, each in its own encapsulated context as before. */
export async function endpoints(app: FastifyInstance) {
  for (const plugin of ENDPOINTS) app.register(plugin);
}
