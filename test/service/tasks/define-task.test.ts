/**
 * Every task definition has its implementation: the export its `kind` names, in the
 * `worker.ts` of the endpoint it names, built by `implementTask` from that very definition.
 * The compiler checks the types on both sides; this checks the names, which it cannot.
 * Worker modules are read as text: importing them on the main thread would run their
 * per-thread set-up (they expect Piscina's workerData).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { TaskDefinition } from "../../../src/service/tasks/define-task.js";

const ENDPOINTS = fileURLToPath(new URL("../../../src/service/endpoints/", import.meta.url));

function isDefinition(value: unknown): value is TaskDefinition<unknown, unknown> {
  return typeof value === "object" && value !== null && "module" in value && "kind" in value;
}

/** The endpoint folders that `endpoints/index.ts` registers, in its order. */
const listed = [
  ...new Set(
    [...readFileSync(`${ENDPOINTS}index.ts`, "utf8").matchAll(/from "\.\/([a-z0-9-]+)\//g)].map(
      (match) => match[1] as string,
    ),
  ),
];
const folders = listed.filter((name) => existsSync(`${ENDPOINTS}${name}/worker.ts`));

describe("task definitions", () => {
  test("every endpoint folder with a worker is listed in endpoints/index.ts", () => {
    const withWorker = readdirSync(ENDPOINTS).filter((name) =>
      existsSync(`${ENDPOINTS}${name}/worker.ts`),
    );
    assert.deepEqual([...folders].sort(), withWorker.sort());
    assert.ok(folders.length >= 9, folders.join(", "));
  });

  for (const folder of folders) {
    test(`${folder}: each definition is implemented under its name`, async () => {
      const definitions = Object.entries(
        (await import(`${ENDPOINTS}${folder}/contract.ts`)) as Record<string, unknown>,
      ).filter((entry): entry is [string, TaskDefinition<unknown, unknown>] =>
        isDefinition(entry[1]),
      );
      assert.ok(definitions.length > 0, `${folder}/contract.ts defines its worker's tasks`);
      const workerFile = `${ENDPOINTS}${folder}/worker.ts`;
      const worker = readFileSync(workerFile, "utf8").replace(/\s+/g, "");
      for (const [name, definition] of definitions) {
        assert.equal(definition.endpoint, folder, `${name} names the folder it is in`);
        assert.equal(fileURLToPath(definition.module), workerFile);
        const exported =
          definition.kind === "default"
            ? `export default implementTask(${name},`
            : `export const ${definition.kind} = implementTask(${name},`;
        assert.ok(
          worker.includes(exported.replace(/\s+/g, "")),
          `${folder}/worker.ts: ${exported}`,
        );
      }
    });
  }
});
