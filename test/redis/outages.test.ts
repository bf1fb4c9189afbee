/**
 * RedisOutages: a process's connections all failing and reconnecting make one line when the
 * outage starts (with its cause) and one when the last of them is back.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import { isConnectionError, outageCause, RedisOutages } from "../../src/redis/outages.js";

function refused(): Error {
  return Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6390"), { code: "ECONNREFUSED" });
}

function recording() {
  const lines: string[] = [];
  const outages = new RedisOutages({
    warn: (message) => lines.push(`warn: ${message}`),
    info: (message) => lines.push(`info: ${message}`),
  });
  return { lines, outages };
}

describe("RedisOutages", () => {
  test("many connections, many attempts: one line down, one line up", () => {
    const { lines, outages } = recording();
    const connections = [new EventEmitter(), new EventEmitter(), new EventEmitter()];
    connections.forEach((connection, index) => {
      outages.watch(connection, `c${index}`);
    });
    for (let attempt = 0; attempt < 50; attempt += 1) {
      for (const connection of connections) {
        connection.emit("error", refused());
        connection.emit("close");
      }
      assert.equal(outages.report(new Error("Connection is closed.")), true);
    }
    connections[0]?.emit("ready");
    connections[1]?.emit("ready");
    assert.deepEqual(lines, ["warn: redis unavailable (ECONNREFUSED); retrying in the background"]);
    connections[2]?.emit("ready");
    assert.deepEqual(lines, [
      "warn: redis unavailable (ECONNREFUSED); retrying in the background",
      "info: redis available again",
    ]);
    // A second outage is a second pair of lines.
    connections[1]?.emit("close");
    connections[1]?.emit("ready");
    assert.equal(lines.length, 4);
    assert.equal(
      lines[2],
      "warn: redis unavailable (connection closed); retrying in the background",
    );
  });

  test("closing on purpose is no outage, and a released connection does not hold one open", () => {
    const { lines, outages } = recording();
    const kept = new EventEmitter();
    const closed = new EventEmitter();
    outages.watch(kept);
    const release = outages.watch(closed);
    release();
    closed.emit("close");
    assert.equal(lines.length, 0);
    const ended = new EventEmitter();
    outages.watch(ended);
    ended.emit("error", refused());
    kept.emit("error", refused());
    ended.emit("end");
    kept.emit("ready");
    assert.deepEqual(
      lines.map((line) => line.split(":")[0]),
      ["warn", "info"],
    );
  });

  test("errors that are not about the connection are left to the caller", () => {
    const { lines, outages } = recording();
    const replyError = Object.assign(new Error("WRONGTYPE Operation against a key"), {
      name: "ReplyError",
    });
    assert.equal(isConnectionError(replyError), false);
    assert.equal(outages.report(replyError), false);
    assert.deepEqual(lines, []);
  });

  test("the cause: the socket code, else the class, else the message; never more", () => {
    assert.equal(outageCause(refused()), "ECONNREFUSED");
    assert.equal(outageCause(Object.assign(new Error("x"), { name: "ReplyError" })), "ReplyError");
    assert.equal(outageCause(new Error("Connection is closed.")), "Connection is closed.");
    assert.equal(outageCause("text"), "unknown");
  });
});
