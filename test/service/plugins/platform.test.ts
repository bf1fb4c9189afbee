/**
 * The platform's plugins are named fastify-plugin plugins (platform-names.ts): one registered
 * without what it needs, or before it, stops the boot with Fastify's message naming both
 * plugins, instead of failing on the first request; and what the platform opened is closed
 * in one order.
 */
import assert from "node:assert/strict";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Fastify from "fastify";
import { SETTLEMENTS_QUEUE } from "../../../queues/settlements.js";
import { buildApp } from "../../../src/service/app.js";
import { openApiCollector } from "../../../src/service/endpoints/meta/openapi.js";
import { bodyAdmission } from "../../../src/service/http/body-admission.js";
import { PLATFORM } from "../../../src/service/platform-names.js";
import { accessControl } from "../../../src/service/plugins/access.js";
import { requestMetrics } from "../../../src/service/plugins/metrics.js";
import {
  configPlugin,
  cpuPoolPlugin,
  metricsPlugin,
  OpenedResources,
} from "../../../src/service/plugins/resources.js";
import { journalDirectory } from "../../../src/storage/job-journal.js";
import {
  startTestService,
  type TestService,
  temporaryDataDir,
  testConfig,
} from "../support/service.js";

/** The error a bare app with `register` applied gives when it boots. */
async function bootError(register: (app: ReturnType<typeof Fastify>) => void): Promise<Error> {
  const app = Fastify();
  register(app);
  try {
    await app.ready();
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  } finally {
    await app.close().catch(() => undefined);
  }
  assert.fail("the app booted");
}

describe("platform plugins declare what they need", () => {
  test("access control without the metrics registry: the missing decorator is named", async () => {
    const error = await bootError((app) => app.register(accessControl));
    assert.equal(
      (error as Error & { code?: string }).code,
      "FST_ERR_PLUGIN_NOT_PRESENT_IN_INSTANCE",
    );
    assert.equal(
      error.message,
      "The decorator 'metrics' required by 'receiptd-access' is not present in Fastify",
    );
  });

  test("access control with hand-made decorations but not their plugins: the dependency is named", async () => {
    const error = await bootError((app) => {
      app.decorate("metrics", {} as never);
      app.decorate("accessServices", {} as never);
      app.register(accessControl);
    });
    assert.equal(
      (error as Error & { code?: string }).code,
      "FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED",
    );
    assert.equal(
      error.message,
      "The dependency 'receiptd-metrics' of plugin 'receiptd-access' is not registered",
    );
  });

  test("request metrics need the metrics registry, and boot with it", async () => {
    const error = await bootError((app) => app.register(requestMetrics));
    assert.equal(
      error.message,
      "The decorator 'metrics' required by 'receiptd-request-metrics' is not present in Fastify",
    );
    const app = Fastify();
    app.register(metricsPlugin);
    app.register(requestMetrics);
    app.get("/", async () => "ok");
    await app.ready();
    const response = await app.inject({ method: "GET", url: "/" });
    assert.equal(response.statusCode, 200);
    const text = await app.metrics.registry.metrics();
    assert.match(text, /route="\/"/);
    await app.close();
  });

  test("a plugin registered before the one it follows fails the boot (body admission before access)", async () => {
    const config = testConfig(await temporaryDataDir());
    const error = await bootError((app) => {
      app.register(configPlugin, { config, clock: Date.now });
      app.register(bodyAdmission);
    });
    assert.equal(
      error.message,
      "The decorator 'principal' required by 'receiptd-body-admission' is not present in Request",
    );
  });

  test("the OpenAPI collector needs the configuration", async () => {
    const error = await bootError((app) => app.register(openApiCollector));
    assert.equal(
      error.message,
      "The decorator 'serviceConfig' required by 'receiptd-openapi-collector' is not present in Fastify",
    );
  });

  test("the CPU pool follows the stores", async () => {
    const config = testConfig(await temporaryDataDir());
    const error = await bootError((app) => {
      app.register(configPlugin, { config, clock: Date.now });
      app.register(metricsPlugin);
      app.decorate("openedResources", new OpenedResources());
      app.register(cpuPoolPlugin);
    });
    assert.equal(
      error.message,
      "The dependency 'receiptd-lifecycle' of plugin 'receiptd-cpu-pool' is not registered",
    );
  });
});

describe("the built app", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService();
  });
  after(() => service.close());

  test("has every platform plugin registered under its name", () => {
    for (const name of Object.values(PLATFORM)) {
      assert.ok(service.app.hasPlugin(name), name);
    }
  });
});

describe("OpenedResources", () => {
  test("closes what was opened in the declared order, whatever the opening order, once", async () => {
    const opened = new OpenedResources();
    const closed: string[] = [];
    const closer = (name: string) => async () => {
      closed.push(name);
    };
    opened.add("backends", closer("backends"));
    opened.add("access-services", closer("access-services"));
    opened.add("cpu-pool", closer("cpu-pool"));
    opened.add("settlement-recorder", closer("settlement-recorder"));
    assert.throws(() => opened.add("cpu-pool", closer("again")), /cpu-pool is already open/);
    await opened.close();
    assert.deepEqual(closed, ["cpu-pool", "settlement-recorder", "access-services", "backends"]);
    await opened.close();
    assert.equal(closed.length, 4);
  });
});

describe("a start that fails", () => {
  test("a receipt journal that cannot be read stops the start, and what was opened is closed", async () => {
    const dataDir = await temporaryDataDir();
    const journal = journalDirectory(dataDir, SETTLEMENTS_QUEUE);
    await mkdir(join(journal, ".."), { recursive: true });
    // A file where the directory should be: the journal cannot be listed.
    await writeFile(journal, "not a directory");
    const config = testConfig(dataDir);
    const workerPorts = () =>
      process.getActiveResourcesInfo().filter((resource) => resource === "MessagePort").length;
    const portsBefore = workerPorts();
    await assert.rejects(buildApp(config), (error: Error & { code?: string }) => {
      assert.match(String(error.code), /^(EEXIST|ENOTDIR)$/);
      return true;
    });
    // The CPU pool's worker threads (one port each) were closed with the rest.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(workerPorts(), portsBefore);
    // And the same DATA_DIR starts cleanly once the journal is readable.
    await rm(journal);
    const app = await buildApp(config);
    assert.ok(app.hasPlugin(PLATFORM.accessServices));
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });
});
