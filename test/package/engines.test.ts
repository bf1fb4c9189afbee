/**
 * `engines.node` admits only Node versions that every direct dependency and devDependency
 * admits (issue 37: it said `>=20.18.1` while @redocly/cli needs `>=20.19.0 <21 || >=22.12.0`,
 * so `npm ci` on 20.18 warned). Ranges are compared with `semver`, the library npm itself
 * judges `engines` with, taken from node_modules: it is not a dependency of its own, but
 * BullMQ (a runtime dependency) and dependency-cruiser both depend on it, and the project
 * has no `@types/semver`, hence the narrow typed view below.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

interface Semver {
  /** True when every version `sub` admits, `dom` admits too. */
  subset(sub: string, dom: string): boolean;
  satisfies(version: string, range: string): boolean;
  validRange(range: string): string | null;
}
const semver = createRequire(import.meta.url)("semver") as Semver;

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Manifest {
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;
const ours = manifest.engines?.node ?? "";

/** Each direct dependency's installed version and its `engines.node` (when it states one). */
function directFloors(): { name: string; version: string; node: string }[] {
  const names = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.devDependencies ?? {}),
  ];
  return names.flatMap((name) => {
    const installed = JSON.parse(
      readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8"),
    ) as Manifest;
    const node = installed.engines?.node;
    return node === undefined ? [] : [{ name, version: installed.version, node }];
  });
}

describe("engines.node", () => {
  test("is a valid range that this Node satisfies", () => {
    assert.notEqual(semver.validRange(ours), null, `engines.node '${ours}'`);
    assert.ok(semver.satisfies(process.version, ours), `${process.version} is outside '${ours}'`);
  });

  test("admits no Node version that a direct dependency refuses", () => {
    const floors = directFloors();
    // Several state a floor (undici 7 the highest runtime one, @redocly/cli a dev one).
    assert.ok(floors.some((floor) => floor.name === "undici"));
    assert.ok(floors.some((floor) => floor.name === "@redocly/cli"));
    const refused = floors.filter((floor) => !semver.subset(ours, floor.node));
    assert.deepEqual(
      refused.map((floor) => `${floor.name}@${floor.version} needs node '${floor.node}'`),
      [],
      `engines.node '${ours}' admits versions these refuse`,
    );
  });

  test("is the range docs/operations.md states", () => {
    const runbook = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
    assert.ok(
      runbook.includes(`\`"node": "${ours}"\``),
      `docs/operations.md quotes engines.node '${ours}'`,
    );
  });
});
