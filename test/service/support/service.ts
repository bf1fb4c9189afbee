/**
 * Builds service apps for tests: a private temporary DATA_DIR, silent logs, a small pool.
 *
 * Most service tests are about what a route does, not about who may call it, so every test
 * service comes with an API key of its own (`key`, `authHeaders`) and its `inject()` presents
 * that key on any request that carries no credential of its own. Tests about access itself
 * (missing keys, the anonymous bucket, payments) ask for `{ anonymous: true }`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance, InjectOptions } from "fastify";
import { type BuildOptions, buildApp } from "../../../src/service/app.js";
import {
  type ConfigOverrides,
  loadConfig,
  type ServiceConfig,
} from "../../../src/service/config.js";

export interface TestService {
  app: FastifyInstance;
  config: ServiceConfig;
  /** The service's own test key (a high daily cap), or null for an anonymous test service. */
  key: string | null;
  /** `{ "x-svc-key": key }`, for requests made with fetch or an SDK over a socket. */
  authHeaders: Record<string, string>;
  /** Closes the app (and its threads) and deletes the temporary DATA_DIR. */
  close(): Promise<void>;
}

export interface TestServiceOptions extends BuildOptions {
  /** No default key: requests go out with exactly the credentials the test gives them. */
  anonymous?: boolean;
}

/** Headers by which a request brings credentials of its own. */
const CREDENTIAL_HEADERS = [
  "authorization",
  "x-svc-key",
  "x-payment",
  "payment-signature",
  "x-pass-token",
];

const TEST_KEY_DAILY_CAP = 1_000_000_000;

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

function presentingKey(app: FastifyInstance, key: string): void {
  const inject = app.inject.bind(app);
  const withKey = (options: InjectOptions | string): InjectOptions => {
    const request = typeof options === "string" ? { url: options } : options;
    const headers = (request.headers ?? {}) as Record<string, unknown>;
    const ownCredential = Object.keys(headers).some((name) =>
      CREDENTIAL_HEADERS.includes(name.toLowerCase()),
    );
    return ownCredential ? request : { ...request, headers: { ...headers, "x-svc-key": key } };
  };
  app.inject = ((options: InjectOptions | string) => inject(withKey(options))) as typeof app.inject;
}

export async function startTestService(
  overrides: ConfigOverrides = {},
  options: TestServiceOptions = {},
): Promise<TestService> {
  const dataDir = overrides.dataDir ?? (await temporaryDataDir());
  const config = testConfig(dataDir, overrides);
  const { anonymous = false, ...buildOptions } = options;
  const app = await buildApp(config, buildOptions);
  let key: string | null = null;
  if (!anonymous) {
    const created = await app.accessServices.keys.create({
      // Unique per start: a test may restart a service on the same DATA_DIR.
      name: `test-suite-${randomBytes(4).toString("hex")}`,
      dailyCap: TEST_KEY_DAILY_CAP,
    });
    key = created.key;
    presentingKey(app, key);
  }
  return {
    app,
    config,
    key,
    authHeaders: key === null ? {} : { "x-svc-key": key },
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
