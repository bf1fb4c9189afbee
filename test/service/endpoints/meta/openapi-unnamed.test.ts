/**
 * A route registered without an operation of a contract (no `config.operation`) has no name
 * in `/openapi.json`: building the document fails and says how to name it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import Fastify from "fastify";
import { openApiCollector } from "../../../../src/service/endpoints/meta/openapi.js";
import { configPlugin } from "../../../../src/service/plugins/resources.js";
import { temporaryDataDir, testConfig } from "../../support/service.js";

test("an unnamed route makes the document fail with a clear message", async () => {
  const app = Fastify();
  await app.register(configPlugin, {
    config: testConfig(await temporaryDataDir()),
    clock: Date.now,
  });
  await app.register(openApiCollector);
  app.get("/unnamed", { config: { access: "keyless" } }, async () => ({}));
  await app.ready();
  try {
    assert.throws(
      () => app.swagger(),
      /GET \/unnamed has no operation name: register it with route\(\)/,
    );
  } finally {
    await app.close();
  }
});
