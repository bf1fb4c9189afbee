/**
 * What a request cut short leaves in the log (issue 24, finding 6): an anonymous `POST /mcp`
 * whose client hangs up mid-body is logged once, at info, as aborted — not at error level with
 * "The serializer for the given status code failed". A keyed request whose body stalls until
 * the connection guard answers 408 leaves one access line and one audit line naming the 408
 * and the key. Over real sockets.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { readdir, readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";

describe("an aborted request's log", () => {
  let service: TestService;
  let port: number;
  const lines: { level: string; msg: string; status?: number | null }[] = [];

  before(async () => {
    service = await startTestService({
      logLevel: "debug",
      logDestination: { write: (line) => lines.push(JSON.parse(line)) },
      http: { idleTimeoutMs: 400, requestTimeoutMs: 60_000, headersTimeoutMs: 20_000 },
    });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    port = (service.app.server.address() as AddressInfo).port;
  });
  after(() => service.close());

  test("a client gone mid-body leaves no error-level line", async () => {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const socket = connect(port, "127.0.0.1");
      await once(socket, "connect");
      socket.write(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
          'Accept: application/json, text/event-stream\r\nContent-Length: 5000\r\n\r\n{"jsonrpc":"2.0",',
      );
      await sleep(50);
      socket.destroy();
    }
    await sleep(300);
    // One access line per request, at info.
    const access = lines.filter(
      (line) => line.msg === "request aborted" || line.msg === "request timed out",
    );
    assert.equal(access.length, 5, JSON.stringify(lines));
    for (const line of access) assert.equal(line.level, "info");
    const errors = lines.filter((line) => line.level === "error" || line.level === "fatal");
    assert.deepEqual(
      errors.map((line) => line.msg),
      [],
    );
  });

  test("a body that stalls into the guard's 408 leaves an access and an audit line", async () => {
    lines.length = 0;
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("latin1");
    });
    socket.write(
      "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `X-Svc-Key: ${service.key}\r\nContent-Length: 5000\r\n\r\n{"bundle":`,
    );
    await once(socket, "close");
    assert.match(answer, /^HTTP\/1\.1 408 /);
    await sleep(100);
    const access = lines.filter((line) => line.msg === "request timed out");
    assert.equal(access.length, 1, JSON.stringify(lines));
    assert.equal(access[0]?.status, 408);
    assert.equal(access[0]?.level, "info");

    await service.app.accessServices.audit.close();
    const auditDir = service.config.auditDir;
    let audited = "";
    for (const name of await readdir(auditDir))
      audited += await readFile(join(auditDir, name), "utf8");
    const timedOut = audited
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { status: number; principal: string; route: string })
      .filter((line) => line.status === 408);
    assert.equal(timedOut.length, 1, audited);
    assert.match(timedOut[0]?.principal ?? "", /^key:/);
    assert.equal(timedOut[0]?.route, "/verify");
  });
});
