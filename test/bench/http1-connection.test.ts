/**
 * The load client's connection (bench/http1-connection.ts) against a node:http server on
 * loopback: it must read every answer form the service uses, exactly, or fail the request.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { type Http1Answer, Http1Connection } from "../../bench/http1-connection.js";

/** What most tests compare: the status and the body, not the server's date. */
const statusAndBody = ({ status, body }: Http1Answer) => ({ status, body });

describe("Http1Connection", () => {
  let server: Server;
  let origin: string;
  let connectionsOpened = 0;

  before(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        if (request.url === "/chunked") {
          response.writeHead(200, { "content-type": "text/plain" });
          response.write("première ");
          response.write("partie, ");
          response.end("fin");
        } else if (request.url === "/close") {
          response.writeHead(401, { connection: "close", "content-length": "2" });
          response.end("no");
        } else if (request.url === "/hang-up") {
          request.socket.destroy();
        } else if (request.url === "/from") {
          response.writeHead(200, {
            "x-peer": request.socket.remoteAddress ?? "",
            "content-length": "0",
          });
          response.end();
        } else {
          const answer = JSON.stringify({
            method: request.method,
            bytes: body.length,
            key: request.headers["x-svc-key"] ?? null,
          });
          response.writeHead(201, { "content-length": Buffer.byteLength(answer) });
          response.end(answer);
        }
      });
    });
    server.on("connection", () => connectionsOpened++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("answers with Content-Length, on one kept-alive connection", async () => {
    const connection = new Http1Connection(origin, 5_000);
    const opened = connectionsOpened;
    const body = Buffer.alloc(300_000, 0x61);
    const first = await connection.request({
      method: "POST",
      path: "/echo",
      headers: { "x-svc-key": "k1" },
      body,
    });
    const second = await connection.request({ method: "GET", path: "/echo" });
    connection.close();
    assert.deepEqual(statusAndBody(first), {
      status: 201,
      body: '{"method":"POST","bytes":300000,"key":"k1"}',
    });
    assert.deepEqual(statusAndBody(second), {
      status: 201,
      body: '{"method":"GET","bytes":0,"key":null}',
    });
    assert.equal(connectionsOpened - opened, 1);
  });

  test("a chunked answer is reassembled, multi-byte characters included", async () => {
    const connection = new Http1Connection(origin, 5_000);
    const answer = await connection.request({ method: "GET", path: "/chunked" });
    connection.close();
    assert.deepEqual(statusAndBody(answer), { status: 200, body: "première partie, fin" });
    assert.equal(answer.headers.get("transfer-encoding"), "chunked");
  });

  test("after Connection: close the next request opens a new connection", async () => {
    const connection = new Http1Connection(origin, 5_000);
    const opened = connectionsOpened;
    const closing = await connection.request({ method: "POST", path: "/close", body: "x" });
    assert.deepEqual(statusAndBody(closing), { status: 401, body: "no" });
    const next = await connection.request({ method: "GET", path: "/echo" });
    connection.close();
    assert.equal(next.status, 201);
    assert.equal(connectionsOpened - opened, 2);
  });

  test("a connection closed without an answer fails that request, and the next one works", async () => {
    const connection = new Http1Connection(origin, 5_000);
    await assert.rejects(connection.request({ method: "GET", path: "/hang-up" }), /closed/);
    const next = await connection.request({ method: "GET", path: "/echo" });
    connection.close();
    assert.equal(next.status, 201);
  });

  test("connects from the local address it is given, and hands back the headers", async () => {
    const connection = new Http1Connection(origin, 5_000, { localAddress: "127.0.2.7" });
    const answer = await connection.request({ method: "GET", path: "/from" });
    connection.close();
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("x-peer"), "127.0.2.7");
  });
});
