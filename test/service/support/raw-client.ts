/**
 * A raw HTTP/1.1 client for tests over real sockets: it writes bytes as given and records
 * what comes back, so a test can hold, stall or half-read connections.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";

/** Far above every short timeout the tests configure: a wait that reaches it means nothing closed. */
export const WAIT_LIMIT_MS = 15_000;

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The responses in `bytes`, in order (interim 1xx ones included, they have no body). */
export function parseResponses(bytes: Buffer): ParsedResponse[] {
  const responses: ParsedResponse[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const end = bytes.indexOf("\r\n\r\n", offset);
    if (end < 0) break;
    const [statusLine = "", ...lines] = bytes
      .subarray(offset, end)
      .toString("latin1")
      .split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = Number(statusLine.split(" ")[1]);
    const length = status < 200 ? 0 : Number(headers["content-length"] ?? 0);
    const bodyStart = end + 4;
    responses.push({
      status,
      headers,
      body: bytes.subarray(bodyStart, bodyStart + length).toString("utf8"),
    });
    offset = bodyStart + length;
  }
  return responses;
}

/** A raw client connection that records what it receives and whether the server closed it. */
export class RawClient {
  readonly socket: Socket;
  readonly #chunks: Buffer[] = [];
  #closed = false;
  readonly #closedPromise: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => this.#chunks.push(chunk));
    // A reset after the server's answer is a way of closing, not a test failure.
    socket.on("error", () => {});
    this.#closedPromise = new Promise((resolve) => {
      socket.on("close", () => {
        this.#closed = true;
        resolve();
      });
    });
  }

  /** A connection to 127.0.0.1, from `localAddress` (another loopback address) if given. */
  static open(port: number, localAddress?: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: "127.0.0.1", localAddress });
      socket.once("connect", () => resolve(new RawClient(socket)));
      socket.once("error", reject);
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(text: string | Buffer): void {
    this.socket.write(text);
  }

  received(): Buffer {
    return Buffer.concat(this.#chunks);
  }

  responses(): ParsedResponse[] {
    return parseResponses(this.received());
  }

  /** Whether the server closed the connection within `limitMs`. */
  async closedWithin(limitMs = WAIT_LIMIT_MS): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, limitMs);
    });
    await Promise.race([this.#closedPromise, limit]);
    clearTimeout(timer);
    return this.#closed;
  }

  /** Waits (bounded) until `count` responses have arrived. */
  async responsesArrived(count: number, limitMs = WAIT_LIMIT_MS): Promise<ParsedResponse[]> {
    await until(() => this.responses().length >= count || this.#closed, limitMs);
    return this.responses();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Polls `condition` every 10 ms, for at most `limitMs`; returns whether it became true. */
export async function until(condition: () => boolean, limitMs = WAIT_LIMIT_MS): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

export function jsonOf(response: ParsedResponse | undefined): unknown {
  assert.ok(response, "no response arrived");
  assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
  return JSON.parse(response.body);
}
