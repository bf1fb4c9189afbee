/** Builds service apps for tests: a private temporary DATA_DIR, silent logs, a small pool. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type BuildOptions, buildApp } from "../../../src/service/app.js";
import {
  type ConfigOverrides,
  loadConfig,
  type ServiceConfig,
} from "../../../src/service/config.js";

export interface TestService {
  app: FastifyInstance;
  config: ServiceConfig;
  /** Closes the app (and its threads) and deletes the temporary DATA_DIR. */
  close(): Promise<void>;
}

export async function temporaryDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "receiptd-service-test-"));
}

/** The configuration a test runs with: no environment, only defaults and `overrides`. */
export function testConfig(dataDir: string, overrides: ConfigOverrides = {}): ServiceConfig {
  return loadConfig(
    {},
    {
      dataDir,
      logLevel: "silent",
      ...overrides,
      cpuPool: { threads: 1, ...overrides.cpuPool },
    },
  );
}

export async function startTestService(
  overrides: ConfigOverrides = {},
  options: BuildOptions = {},
): Promise<TestService> {
  const dataDir = overrides.dataDir ?? (await temporaryDataDir());
  const config = testConfig(dataDir, overrides);
  const app = await buildApp(config, options);
  return {
    app,
    config,
    async close() {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** File URL of a task module in test/service/fixtures. */
export function fixtureTaskModule(name: string): string {
  return new URL(`../fixtures/${name}.ts`, import.meta.url).href;
}
