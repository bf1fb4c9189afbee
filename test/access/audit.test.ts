/** Audit lines: content-free, one file per UTC day, whole lines under concurrent writers. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type AuditEvent,
  AuditLog,
  auditDirFrom,
  formatAuditLine,
  parseAuditLine,
} from "../../src/access/audit.js";
import { type AuditCompaction, auditDirectoryBytes } from "../../src/access/audit-files.js";

const event = (overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  principal: "key:0123456789ab",
  method: "POST",
  route: "/verify",
  status: 200,
  bytes: 512,
  latencyMs: 3.4,
  ...overrides,
});

const at = (iso: string) => Date.parse(iso);

describe("audit lines", () => {
  test("a line has exactly the seven members, in order, with whole-second UTC time", () => {
    assert.equal(
      formatAuditLine(event(), at("2026-11-21T10:00:05.789Z")),
      '{"time":"2026-11-21T10:00:05Z","principal":"key:0123456789ab","method":"POST","route":"/verify","status":200,"bytes":512,"latency_ms":3}\n',
    );
  });

  test("a URL given as the route loses its query; anything odd is neutralised", () => {
    const line = formatAuditLine(
      event({
        route: "/anchors/sha256:abc?secret=1#frag",
        method: "get; rm",
        principal: "x402:0xabcdef0123456789abcdef0123456789abcdef01",
        bytes: -5,
        latencyMs: Number.NaN,
      }),
      0,
    );
    assert.equal(
      line,
      '{"time":"1970-01-01T00:00:00Z","principal":"x402:0xabcdef0123456789abcdef0123456789abcdef01","method":"OTHER","route":"/anchors/sha256:abc","status":200,"bytes":0,"latency_ms":0}\n',
    );
    assert.equal(
      JSON.parse(formatAuditLine(event({ route: "no-template" }), 0)).route,
      "(unmatched)",
    );
  });

  test("a principal must be one of the three kinds (so no client text gets in)", () => {
    for (const principal of ["key:Bob", "x402:0xABC", "203.0.113.9", "anonymous "]) {
      assert.throws(
        () => formatAuditLine(event({ principal: principal as AuditEvent["principal"] }), 0),
        RangeError,
      );
    }
  });

  test("parseAuditLine reads written lines and refuses torn or foreign ones", () => {
    const text = formatAuditLine(event({ principal: "anonymous", status: 429 }), 0).trimEnd();
    assert.deepEqual(parseAuditLine(text), {
      time: "1970-01-01T00:00:00Z",
      principal: "anonymous",
      method: "POST",
      route: "/verify",
      status: 429,
      bytes: 512,
      latencyMs: 3,
      chargedRefusal: false,
      unchargedResult: false,
      replayed: false,
    });
    assert.equal(parseAuditLine(text.slice(0, 40)), null);
    assert.equal(parseAuditLine("[]"), null);
    assert.equal(parseAuditLine(text.replace('"anonymous"', '"someone"')), null);
  });

  test('a refusal charged for its work ends with "charged":true (issue 22)', () => {
    const charged = event({ status: 422, chargedRefusal: true });
    const text = formatAuditLine(charged, 0).trimEnd();
    assert.match(text, /"latency_ms":3,"charged":true\}$/);
    assert.equal(parseAuditLine(text)?.chargedRefusal, true);
    assert.equal(parseAuditLine(text.replace("true}", "1}")), null);
    assert.doesNotMatch(formatAuditLine(event({ status: 400 }), 0), /charged/);
  });

  test('a 2xx that carries no work done ends with "charged":false (issue 37, MCP tool errors)', () => {
    const text = formatAuditLine(event({ status: 200, unchargedResult: true }), 0).trimEnd();
    assert.match(text, /"latency_ms":3,"charged":false\}$/);
    assert.deepEqual(
      [parseAuditLine(text)?.unchargedResult, parseAuditLine(text)?.chargedRefusal],
      [true, false],
    );
    assert.equal(parseAuditLine(text.replace("false}", "0}")), null);
  });

  test('an Idempotency-Key replay ends with "replayed":true and is never billed (issue 28)', () => {
    const replayed = event({ status: 201, replayed: true });
    const text = formatAuditLine(replayed, 0).trimEnd();
    assert.match(text, /"latency_ms":3,"replayed":true\}$/);
    assert.equal(parseAuditLine(text)?.replayed, true);
    assert.equal(parseAuditLine(text.replace("true}", "1}")), null);
    assert.doesNotMatch(formatAuditLine(event({ status: 201 }), 0), /replayed/);
  });

  test("AUDIT_DIR, else DATA_DIR/audit", () => {
    assert.equal(auditDirFrom({}, "/srv/data"), "/srv/data/audit");
    assert.equal(
      auditDirFrom({ AUDIT_DIR: "/var/log/receiptd" }, "/srv/data"),
      "/var/log/receiptd",
    );
  });
});

describe("AuditLog", () => {
  let scratch: string;
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "receiptd-audit-"));
  });
  after(() => rm(scratch, { recursive: true, force: true }));

  test("lines go to the file of their UTC day, owner-only, written on close", async () => {
    const directory = join(scratch, "days");
    const log = new AuditLog(directory, { flushIntervalMs: 3_600_000 });
    log.record(event({ timeMs: at("2026-11-21T23:59:59.900Z") }));
    log.record(event({ timeMs: at("2026-11-22T00:00:00.000Z"), status: 429, route: "/anchors" }));
    log.record(event({ timeMs: at("2026-11-22T08:00:00.000Z"), principal: "anonymous" }));
    await log.close();
    assert.deepEqual((await readdir(directory)).sort(), ["2026-11-21.jsonl", "2026-11-22.jsonl"]);
    assert.equal(
      await readFile(join(directory, "2026-11-21.jsonl"), "utf8"),
      formatAuditLine(event(), at("2026-11-21T23:59:59Z")),
    );
    const second = (await readFile(join(directory, "2026-11-22.jsonl"), "utf8")).split("\n");
    assert.deepEqual(
      second.map((line) => (line === "" ? null : parseAuditLine(line)?.time)),
      ["2026-11-22T00:00:00Z", "2026-11-22T08:00:00Z", null],
    );
    for (const name of await readdir(directory)) {
      assert.equal((await stat(join(directory, name))).mode & 0o777, 0o600);
    }
    assert.equal((await stat(directory)).mode & 0o777, 0o700);
  });

  test("the clock picks the day when the event has no time; later lines append", async () => {
    const directory = join(scratch, "clock");
    const clock = { now: at("2026-12-31T23:59:59Z") };
    const first = new AuditLog(directory, { now: () => clock.now });
    first.record(event());
    clock.now = at("2027-01-01T00:00:00Z");
    first.record(event());
    await first.close();
    const second = new AuditLog(directory, { now: () => clock.now });
    second.record(event({ status: 500 }));
    await second.close();
    assert.deepEqual((await readdir(directory)).sort(), ["2026-12-31.jsonl", "2027-01-01.jsonl"]);
    const newYear = await readFile(join(directory, "2027-01-01.jsonl"), "utf8");
    assert.deepEqual(
      newYear
        .trimEnd()
        .split("\n")
        .map((line) => parseAuditLine(line)?.status),
      [200, 500],
    );
  });

  test("buffered lines are written within the flush interval", async () => {
    const directory = join(scratch, "interval");
    const log = new AuditLog(directory, { flushIntervalMs: 5 });
    log.record(event({ timeMs: at("2026-11-21T10:00:00Z") }));
    const file = join(directory, "2026-11-21.jsonl");
    let content = "";
    while (content === "") {
      await sleep(5);
      content = await readFile(file, "utf8").catch(() => "");
    }
    assert.equal(parseAuditLine(content.trimEnd())?.route, "/verify");
    await log.close();
  });

  test("a line recorded after close is still written", async () => {
    const directory = join(scratch, "late");
    const log = new AuditLog(directory);
    await log.close();
    log.record(event({ timeMs: at("2026-11-21T10:00:00Z"), status: 204 }));
    const content = await readFile(join(directory, "2026-11-21.jsonl"), "utf8");
    assert.equal(parseAuditLine(content.trimEnd())?.status, 204);
  });

  test("housekeeping compresses closed days, removes old ones, and keeps the size it measured (issue 37)", async () => {
    const directory = join(scratch, "housekeeping");
    await mkdir(directory);
    const old = formatAuditLine(event(), at("2026-09-01T10:00:00Z"));
    const closed = formatAuditLine(event(), at("2026-11-20T10:00:00Z"));
    await writeFile(join(directory, "2026-09-01.jsonl"), old);
    await writeFile(join(directory, "2026-11-20.jsonl"), closed.repeat(100));
    const reports: AuditCompaction[] = [];
    const clock = { now: at("2026-11-21T10:00:00Z") };
    const log = new AuditLog(directory, {
      now: () => clock.now,
      retentionDays: 62,
      onCompaction: (report) => reports.push(report),
    });
    await log.startHousekeeping();
    await log.compact();
    assert.deepEqual(
      reports.map((report) => [report.removed, report.compressed]),
      [[["2026-09-01"], ["2026-11-20"]]],
    );
    assert.deepEqual(await readdir(directory), ["2026-11-20.jsonl.gz"]);
    assert.equal(log.bytes, await auditDirectoryBytes(directory));
    assert.ok(log.bytes < closed.length * 100, "compressed");
    log.record(event());
    await log.flush();
    assert.equal(log.bytes, await auditDirectoryBytes(directory), "appended lines are counted");
    await log.close();
    clock.now = at("2026-11-25T10:00:00Z");
    await log.startHousekeeping();
    assert.deepEqual(await readdir(directory), ["2026-11-20.jsonl.gz", "2026-11-21.jsonl"]);
    assert.equal(reports.length, 1, "a closed log does not compact");
  });

  test("without a retention the log never compacts on its own", async () => {
    const directory = join(scratch, "no-housekeeping");
    await mkdir(directory);
    await writeFile(join(directory, "2026-09-01.jsonl"), "x\n");
    const log = new AuditLog(directory, { now: () => at("2026-11-21T10:00:00Z") });
    await log.startHousekeeping();
    await log.close();
    assert.deepEqual(await readdir(directory), ["2026-09-01.jsonl"]);
  });

  test("a failed compaction is reported and does not throw", async () => {
    const blocker = join(scratch, "compaction-blocker");
    await writeFile(blocker, "");
    const errors: unknown[] = [];
    const log = new AuditLog(blocker, {
      retentionDays: 62,
      onCompactionError: (error) => errors.push(error),
    });
    await log.startHousekeeping();
    await assert.rejects(log.compact(), { code: "ENOTDIR" });
    await log.close();
    assert.ok(errors.length >= 1);
  });

  test("a write failure is reported with the lines it lost, and does not throw", async () => {
    const blocker = join(scratch, "not-a-directory");
    await writeFile(blocker, "");
    const failures: number[] = [];
    const log = new AuditLog(join(blocker, "audit"), {
      onError: (_error, lost) => failures.push(lost),
    });
    log.record(event());
    log.record(event());
    await log.close();
    assert.deepEqual(failures, [2]);
  });

  test("two processes appending to one day's file produce only whole lines", {
    timeout: 60_000,
  }, async () => {
    const directory = join(scratch, "concurrent");
    const script = join(scratch, "writer.mts");
    const auditModule = new URL("../../src/access/audit.ts", import.meta.url).href;
    await writeFile(
      script,
      `import { AuditLog } from ${JSON.stringify(auditModule)};
const [directory, principal, count] = process.argv.slice(2);
const log = new AuditLog(directory, { maxBufferedBytes: 4096 });
for (let i = 0; i < Number(count); i += 1) {
  log.record({ principal, method: "POST", route: "/verify/" + "x".repeat(i % 300), status: 200,
    bytes: i, latencyMs: 1, timeMs: Date.parse("2026-11-21T12:00:00Z") });
  if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await log.close();
`,
    );
    const count = 4000;
    const writers = ["key:aaaaaaaaaaaa", "key:bbbbbbbbbbbb"].map((principal) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", script, directory, principal, String(count)],
        { stdio: ["ignore", "ignore", "inherit"] },
      );
      return once(child, "exit");
    });
    for (const [code] of await Promise.all(writers)) assert.equal(code, 0);
    const content = await readFile(join(directory, "2026-11-21.jsonl"), "utf8");
    assert.ok(content.endsWith("\n"));
    const lines = content.slice(0, -1).split("\n");
    assert.equal(lines.length, 2 * count);
    const perWriter = new Map<string, number[]>();
    for (const text of lines) {
      const line = parseAuditLine(text);
      assert.ok(line !== null, `a torn line: ${text.slice(0, 80)}`);
      assert.equal(line.route.length, "/verify/".length + (line.bytes % 300));
      perWriter.set(line.principal, [...(perWriter.get(line.principal) ?? []), line.bytes]);
    }
    for (const bytes of perWriter.values()) {
      assert.deepEqual(
        bytes,
        Array.from({ length: count }, (_, index) => index),
      );
    }
    assert.equal(perWriter.size, 2);
  });
});
