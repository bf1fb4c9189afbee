/**
 * A TCP proxy between a web process and its Redis that can stop passing bytes at an exact
 * command and pass them later, in order: the deterministic form of "the command reached a
 * stalled Redis's socket and was not answered" (issue 34, finding 1). Signals alone cannot aim
 * at one command: a SIGSTOP lands before, during or after it depending on timing.
 *
 * `holdFrom(marker)` arms it: the first chunk from a client that contains `marker` (the client
 * sends each command, or pipeline, in one write) and everything after it, on every connection
 * and in both directions, is held rather than forwarded. `release()` forwards what was held,
 * in order, and passes bytes again. While bytes are held, the web's command times out exactly
 * as it would against a stopped Redis; the test decides whether the held bytes reach Redis.
 */
import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";

interface Pipe {
  from: Socket;
  to: Socket;
  held: Buffer[];
}

export interface RedisProxy {
  url: string;
  /** Resolves when a chunk containing `marker` arrives; from it on, every byte is held. */
  holdFrom(marker: string): Promise<void>;
  /** Holds every byte from now on (a stall before the next command). */
  holdNow(): void;
  /** Forwards what was held, in order, and passes bytes again. */
  release(): void;
  /** Delays every byte, both ways, by `ms` from now on (0: none): a slow Redis, not a stopped one. */
  delay(ms: number): void;
  /** Whether any byte sent by a client since `mark()` contains `text`. */
  sentSinceMark(text: string): boolean;
  /** Starts a new record of what clients send. */
  mark(): void;
  close(): Promise<void>;
}

export async function startRedisProxy(redisPort: number): Promise<RedisProxy> {
  const pipes: Pipe[] = [];
  const sockets = new Set<Socket>();
  let holding = false;
  let armed: { marker: string; hit: () => void } | undefined;
  let sent: Buffer[] = [];
  let delayMs = 0;

  const forward = (pipe: Pipe, chunk: Buffer, fromClient: boolean) => {
    if (fromClient) {
      sent.push(chunk);
      if (armed !== undefined && chunk.includes(armed.marker)) {
        const { hit } = armed;
        armed = undefined;
        holding = true;
        hit();
      }
    }
    if (holding || pipe.held.length > 0) pipe.held.push(chunk);
    else if (delayMs > 0) {
      // Timers of one duration fire in the order they were set: the bytes stay in order.
      setTimeout(() => {
        if (!pipe.to.destroyed) pipe.to.write(chunk);
      }, delayMs);
    } else pipe.to.write(chunk);
  };

  const server: Server = createServer((client) => {
    const upstream = createConnection({ port: redisPort, host: "127.0.0.1" });
    sockets.add(client);
    sockets.add(upstream);
    const up: Pipe = { from: client, to: upstream, held: [] };
    const down: Pipe = { from: upstream, to: client, held: [] };
    pipes.push(up, down);
    client.on("data", (chunk: Buffer) => forward(up, chunk, true));
    upstream.on("data", (chunk: Buffer) => forward(down, chunk, false));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      pipes.splice(pipes.indexOf(up), 1);
      pipes.splice(pipes.indexOf(down), 1);
    };
    client.once("close", end);
    upstream.once("close", end);
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");

  return {
    url: `redis://127.0.0.1:${address.port}`,
    holdFrom(marker) {
      return new Promise((resolve) => {
        armed = { marker, hit: resolve };
      });
    },
    holdNow() {
      holding = true;
    },
    release() {
      holding = false;
      for (const pipe of pipes) {
        const held = pipe.held;
        pipe.held = [];
        for (const chunk of held) if (!pipe.to.destroyed) pipe.to.write(chunk);
      }
    },
    delay(ms) {
      delayMs = ms;
    },
    sentSinceMark(text) {
      return Buffer.concat(sent).includes(text);
    },
    mark() {
      sent = [];
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}
