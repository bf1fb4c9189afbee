/**
 * One keep-alive HTTP/1.1 connection of the load client: it writes a request and reads its
 * answer, one at a time, over a plain TCP socket.
 *
 * The client shares the machine with the service it measures (docs/benchmarks.md), so every
 * microsecond it spends is taken from the service. undici's pool spent about as much CPU per
 * single-bundle request as the service's own main thread; this connection does only what a
 * closed-loop benchmark needs: `Content-Length` and chunked answers, `Connection: close`, and
 * a reconnect after the server closed the connection. Anything it cannot read is an error of
 * that request, never a guess.
 */
import { connect, type Socket } from "node:net";

export interface Http1Request {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface Http1Answer {
  status: number;
  body: string;
  /** The answer's headers, names in lower case. */
  headers: ReadonlyMap<string, string>;
}

export interface Http1ConnectionOptions {
  /** The source address to connect from (e.g. `127.0.2.1`: another client to the server). */
  localAddress?: string;
}

const HEADER_END = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");

export class Http1Connection {
  readonly #host: string;
  readonly #port: number;
  readonly #timeoutMs: number;
  readonly #localAddress: string | undefined;
  #socket: Socket | null = null;
  #buffered: Buffer = Buffer.alloc(0);
  #waiting: (() => void) | null = null;
  #failure: Error | null = null;

  constructor(origin: string, timeoutMs: number, options: Http1ConnectionOptions = {}) {
    const url = new URL(origin);
    this.#host = url.hostname;
    this.#port = Number(url.port || 80);
    this.#timeoutMs = timeoutMs;
    this.#localAddress = options.localAddress;
  }

  async request(spec: Http1Request): Promise<Http1Answer> {
    const socket = await this.#connected();
    const body = spec.body === undefined ? Buffer.alloc(0) : Buffer.from(spec.body);
    let head = `${spec.method} ${spec.path} HTTP/1.1\r\nhost: ${this.#host}:${this.#port}\r\n`;
    for (const [name, value] of Object.entries(spec.headers ?? {})) head += `${name}: ${value}\r\n`;
    if (spec.method !== "GET" || body.length > 0) head += `content-length: ${body.length}\r\n`;
    socket.write(
      body.length > 0 ? Buffer.concat([Buffer.from(`${head}\r\n`), body]) : `${head}\r\n`,
    );
    try {
      return await this.#readAnswer();
    } catch (error) {
      this.close();
      throw error;
    }
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = null;
    this.#buffered = Buffer.alloc(0);
  }

  async #connected(): Promise<Socket> {
    if (this.#socket !== null && !this.#socket.destroyed) return this.#socket;
    this.#failure = null;
    this.#buffered = Buffer.alloc(0);
    const socket = connect({
      host: this.#host,
      port: this.#port,
      noDelay: true,
      ...(this.#localAddress === undefined ? {} : { localAddress: this.#localAddress }),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    // A socket closed by `close()` still reports its end later: only the current one counts.
    socket.on("data", (chunk: Buffer) => {
      if (this.#socket !== socket) return;
      this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
      this.#wake();
    });
    const ended = (error?: Error) => {
      if (this.#socket !== socket) return;
      this.#failure = error ?? new Error("the server closed the connection");
      this.#wake();
    };
    socket.on("error", ended);
    socket.on("close", () => ended());
    this.#socket = socket;
    return socket;
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
  }

  /** Resolves when more bytes arrived or the connection ended. */
  async #more(deadline: number): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw new Error(`no answer within ${this.#timeoutMs} ms`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, remaining);
      this.#waiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async #readAnswer(): Promise<Http1Answer> {
    const deadline = performance.now() + this.#timeoutMs;
    let headerEnd = this.#buffered.indexOf(HEADER_END);
    while (headerEnd < 0) {
      await this.#more(deadline);
      headerEnd = this.#buffered.indexOf(HEADER_END);
    }
    const head = this.#buffered.subarray(0, headerEnd).toString("latin1");
    this.#buffered = this.#buffered.subarray(headerEnd + HEADER_END.length);
    const lines = head.split("\r\n");
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "");
    if (status === null) throw new Error(`not an HTTP/1.1 status line: ${lines[0]}`);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
    }
    const body =
      headers.get("transfer-encoding")?.toLowerCase() === "chunked"
        ? await this.#readChunked(deadline)
        : await this.#readLength(Number(headers.get("content-length") ?? "0"), deadline);
    if (headers.get("connection")?.toLowerCase() === "close") this.close();
    return { status: Number(status[1]), body: body.toString("utf8"), headers };
  }

  async #readLength(length: number, deadline: number): Promise<Buffer> {
    if (!Number.isSafeInteger(length) || length < 0) throw new Error("bad Content-Length");
    while (this.#buffered.length < length) await this.#more(deadline);
    const body = this.#buffered.subarray(0, length);
    this.#buffered = this.#buffered.subarray(length);
    return body;
  }

  async #readChunked(deadline: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (;;) {
      let lineEnd = this.#buffered.indexOf(CRLF);
      while (lineEnd < 0) {
        await this.#more(deadline);
        lineEnd = this.#buffered.indexOf(CRLF);
      }
      const size = Number.parseInt(this.#buffered.subarray(0, lineEnd).toString("latin1"), 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new Error("bad chunk size");
      while (this.#buffered.length < lineEnd + 2 + size + 2) await this.#more(deadline);
      parts.push(this.#buffered.subarray(lineEnd + 2, lineEnd + 2 + size));
      this.#buffered = this.#buffered.subarray(lineEnd + 2 + size + 2);
      // The last chunk has no trailers here: Fastify writes none.
      if (size === 0) return Buffer.concat(parts);
    }
  }
}
