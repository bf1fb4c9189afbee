/**
 * The Fastify application (architecture.md): built here, listened on elsewhere
 * (`server.ts`), so tests drive the same app with `inject()` or a socket on port 0.
 */
import Fastify, { type FastifyInstance } from "fastify";
import type { Ed25519Signer } from "../verifier/crypto/ed25519.js";
import type { ServiceConfig } from "./config.js";
import { CpuPool } from "./cpu-pool.js";
import { handleFrameworkError, registerErrorHandling } from "./plugins/errors.js";
import { loggingOptions } from "./plugins/logging.js";
import { registerRawBodyParser } from "./plugins/raw-body.js";
import { generateRequestId, registerRequestIdHeader } from "./plugins/request-id.js";
import { healthRoutes } from "./routes/health.js";
import { infoRoutes } from "./routes/info.js";
import { verifyRoutes } from "./routes/verify.js";
import { loadOrCreateServiceKey } from "./service-key.js";
import type { VerifyWorkerContext } from "./verify-request.js";

declare module "fastify" {
  interface FastifyInstance {
    serviceConfig: ServiceConfig;
    /** The service's Ed25519 identity: signs verification receipts, named at `/info`. */
    serviceSigner: Ed25519Signer;
    /** All CPU-bound work runs here; closed when the app closes. */
    cpuPool: CpuPool;
  }
}

/**
 * Builds the app without listening. Creates the service key in `config.dataDir` on first
 * use and starts the worker threads; `app.close()` releases both.
 */
export async function buildApp(config: ServiceConfig): Promise<FastifyInstance> {
  const signer = await loadOrCreateServiceKey(config.dataDir);
  const app = Fastify({
    ...loggingOptions(config),
    bodyLimit: config.limits.maxBodyBytes,
    genReqId: generateRequestId,
    frameworkErrors: handleFrameworkError,
    // While draining, requests already on open connections are still answered normally
    // (with `Connection: close`) rather than with Fastify's own 503 body.
    return503OnClosing: false,
  });

  const workerContext: VerifyWorkerContext = {
    maxBatch: config.limits.maxBatch,
    receiptSigner: signer,
  };
  const pool = new CpuPool({
    threads: config.cpuPool.threads,
    maxQueue: config.cpuPool.maxQueue,
    workerData: workerContext,
  });
  app.decorate("serviceConfig", config);
  app.decorate("serviceSigner", signer);
  app.decorate("cpuPool", pool);
  // onClose runs once in-flight requests have been answered, so no task is cut short.
  app.addHook("onClose", async () => pool.close());

  registerRequestIdHeader(app);
  registerErrorHandling(app);
  registerRawBodyParser(app);

  app.register(healthRoutes);
  app.register(infoRoutes);
  app.register(verifyRoutes, { taskModule: config.cpuPool.verifyTaskModule });
  return app;
}
