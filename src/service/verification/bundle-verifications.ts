/**
 * The main-thread half of bundle verification: the one way the endpoints that verify bundles
 * (`POST /verify`, MCP's `verify_bundle`) get a verdict, so that each of them consults the
 * opt-in digest cache the same way and every verdict reaches the same counter. The verifying
 * itself runs on a worker (`answer.ts`); this side moves bytes, reads and writes the cache,
 * and counts.
 */
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { type CachedVerdict, type DigestCache, digestCacheKey } from "../../cache/digest-cache.js";
import type { ServiceMetrics } from "../../metrics/metrics.js";
import { queueWeightOfBody } from "../cost.js";
import type { CpuPool, RunOptions } from "../cpu-pool.js";
import type { Answer } from "../errors.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { transferableBody } from "../plugins/raw-body.js";
import type { TaskDefinition } from "../tasks/define-task.js";
import { type CacheableVerdict, cachedVerdictResponse } from "./cached-verdict.js";
import type {
  VerdictTally,
  VerificationAnswer,
  VerifyFlags,
  VerifyOutcome,
  VerifyTask,
} from "./outcome.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Bundle verification with the digest cache and the verdict counter behind it. */
    bundleVerifications: BundleVerifications;
  }
}

export interface VerificationRequest extends VerifyFlags {
  /**
   * Opt in to the digest cache (`?cache=1`): a single bundle is answered from it, or verified
   * and remembered; a batch ignores it.
   */
  cache: boolean;
  /** The cap units the request may be charged (`authorisedUnits`, plugins/access.ts). */
  authorisedUnits: number;
}

export interface BundleVerificationsOptions {
  pool: CpuPool;
  /** The worker task that runs `answerVerifyRequest` (the verify endpoint's). */
  task: TaskDefinition<VerifyTask, VerifyOutcome>;
  digestCache: DigestCache;
  metrics: ServiceMetrics;
  /** Milliseconds since the epoch, for a hit's age. */
  clock: () => number;
  log: FastifyBaseLogger;
}

export class BundleVerifications {
  readonly #options: BundleVerificationsOptions;

  constructor(options: BundleVerificationsOptions) {
    this.#options = options;
  }

  /**
   * The answer to a `POST /verify` body (a bundle, `{bundle}` or `{bundles}`), as the worker
   * makes it or, with `cache`, from the digest cache. One hop to a worker at most, none on a
   * hit. `raw` is moved to the worker: it must be a body the caller owns.
   */
  async verify(
    raw: Buffer,
    request: VerificationRequest,
    options: RunOptions = {},
  ): Promise<VerificationAnswer & { units: number }> {
    const { pool, task, clock } = this.#options;
    const cacheKey = request.cache ? digestCacheKey(raw, request.requireAnchor) : null;
    if (cacheKey !== null) {
      const hit = await this.#cachedEntry(cacheKey);
      if (hit !== null) {
        const ageSeconds = Math.max(0, Math.floor((clock() - hit.storedAtMs) / 1000));
        // A hit checks no signature: one unit.
        return verdictAnswer(
          cachedVerdictResponse(hit, request.receipt, { hit: true, ageSeconds }),
          1,
        );
      }
    }
    const body = transferableBody(raw);
    const input: VerifyTask = {
      body,
      requireAnchor: request.requireAnchor,
      receipt: request.receipt,
      cache: request.cache,
      authorisedUnits: request.authorisedUnits,
    };
    const outcome = await pool.run(task, input, [body], {
      cost: queueWeightOfBody(body.byteLength),
      ...options,
    });
    this.count(outcome.verdicts);
    const { units = 1 } = outcome;
    if (!("cacheable" in outcome)) return { ...outcome, units };
    if (cacheKey !== null) await this.#remember(cacheKey, outcome.cacheable);
    return verdictAnswer(
      cachedVerdictResponse(outcome.cacheable, request.receipt, { hit: false }),
      units,
    );
  }

  /** Verdicts a worker made outside `verify` (bundles verified inside another request). */
  count(verdicts: VerdictTally | undefined): void {
    this.#options.metrics.countVerdicts(verdicts);
  }

  /**
   * The cache is an optimisation: when it cannot be read (Redis briefly down, in distributed
   * mode) the request is verified as if it were a miss, and a failed write loses only the
   * entry. Neither fails the request.
   */
  async #cachedEntry(key: string): Promise<CachedVerdict | null> {
    const { digestCache, metrics, log } = this.#options;
    try {
      const entry = await digestCache.get(key);
      metrics.digestCache.inc({ result: entry === null ? "miss" : "hit" });
      return entry;
    } catch (error) {
      metrics.digestCache.inc({ result: "error" });
      log.warn({ err: error }, "digest cache unavailable; verifying without it");
      return null;
    }
  }

  async #remember(key: string, verdict: CacheableVerdict): Promise<void> {
    try {
      await this.#options.digestCache.set(key, verdict);
    } catch (error) {
      this.#options.log.warn({ err: error }, "digest cache unavailable; verdict not cached");
    }
  }
}

function verdictAnswer(json: string, units: number): Answer<200> & { units: number } {
  return { statusCode: 200, json, units };
}

/**
 * `bundleVerifications`, for the endpoints that verify bundles. The task is handed in, not
 * imported, so this shared module does not reach into the verify endpoint's folder.
 */
export const bundleVerificationsPlugin = fastifyPlugin<{
  task: TaskDefinition<VerifyTask, VerifyOutcome>;
}>(
  async (app: FastifyInstance, { task }) => {
    app.decorate(
      "bundleVerifications",
      new BundleVerifications({
        pool: app.cpuPool,
        task,
        digestCache: app.digestCache,
        metrics: app.metrics,
        clock: app.clock,
        log: app.log,
      }),
    );
  },
  {
    name: PLATFORM.bundleVerifications,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.config, PLATFORM.metrics, PLATFORM.backends, PLATFORM.cpuPool],
    decorators: { fastify: ["cpuPool", "digestCache", "metrics", "clock"] },
  },
);
