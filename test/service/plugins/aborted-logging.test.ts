/**
 * What a request cut short leaves in the log (issue 24, finding 6): an anonymous `POST /mcp`
 * whose client hangs up mid-body is logged once, at info, as aborted — not at error level with
 * "The serializer for the given status code failed". Over a real socket.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";

describe("an aborted request's log", () => {
  let service: TestService;
  let port: number;
  const lines: { level: string; msg: string }[] = [];

  before(async () => {
    service = await startTestService(
      {
        logLevel: "debug",
        logDestination: { write: (line) => lines.push(JSON.parse(line)) },
      },
      { anonymous: true },
    );
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
    const access = lines.filter((line) => line.msg === "request aborted");
    assert.equal(access.length, 5, JSON.stringify(lines));
    for (const line of access) assert.equal(line.level, "info");
    const errors = lines.filter((line) => line.level === "error" || line.level === "fatal");
    assert.deepEqual(
      errors.map((line) => line.msg),
      [],
    );
  });
});
