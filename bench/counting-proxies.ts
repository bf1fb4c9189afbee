/**
 * TCP proxies that count what receiptd asks of Redis and PostgreSQL, without touching the
 * service or using Redis' MONITOR (bench/fleet.ts). Each sits between the service and a
 * private server on 127.0.0.1 and reads only the client's side of the stream.
 *
 * - Redis: a round trip is a burst of bytes the client writes before it reads an answer;
 *   one `data` chunk per burst (a pipeline or a MULTI block is written at once). Which
 *   commands, comes from the server's `INFO commandstats` instead.
 * - PostgreSQL: the frontend protocol is parsed (a type byte and a length per message):
 *   statements executed (`Execute`, or each statement of a simple `Query`), round trips
 *   (`Sync` and simple `Query`, each answered by ReadyForQuery), and the statements by SQL
 *   verb (named prepared statements are remembered from their `Parse`).
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { Worker } from "node:worker_threads";

export interface RedisTraffic {
  /** Client bursts: one per request-answer exchange. */
  roundTrips: number;
  bytes: number;
  connections: number;
}

export interface PostgresTraffic {
  statements: number;
  roundTrips: number;
  /** Statements by their first SQL word, upper case (SELECT, INSERT, BEGIN, COMMIT …). */
  byVerb: Record<string, number>;
  connections: number;
}

export interface CountingProxy<Traffic> {
  port: number;
  /** A copy of the counts so far. */
  read(): Traffic;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (typeof address === "object" && address !== null) resolve(address.port);
      else reject(new Error("no port"));
    });
  });
}

function pipeThrough(
  client: Socket,
  upstreamPort: number,
  onClientData: (chunk: Buffer) => void,
  sockets: Set<Socket>,
): void {
  const upstream = connect(upstreamPort, "127.0.0.1");
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  sockets.add(client);
  sockets.add(upstream);
  client.on("data", (chunk: Buffer) => {
    onClientData(chunk);
    upstream.write(chunk);
  });
  upstream.on("data", (chunk: Buffer) => client.write(chunk));
  const end = () => {
    client.destroy();
    upstream.destroy();
    sockets.delete(client);
    sockets.delete(upstream);
  };
  client.on("close", end);
  upstream.on("close", end);
  client.on("error", end);
  upstream.on("error", end);
}

async function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function redisCountingProxy(
  upstreamPort: number,
): Promise<CountingProxy<RedisTraffic>> {
  const traffic: RedisTraffic = { roundTrips: 0, bytes: 0, connections: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    traffic.connections++;
    pipeThrough(
      client,
      upstreamPort,
      (chunk) => {
        traffic.roundTrips++;
        traffic.bytes += chunk.length;
      },
      sockets,
    );
  });
  const port = await listen(server);
  return { port, read: () => ({ ...traffic }), close: () => closeServer(server, sockets) };
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

/** The first SQL word of a statement, after comments and whitespace. */
function verbOf(sql: string): string {
  const match = /^(?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*([A-Za-z]+)/.exec(sql);
  return match?.[1]?.toUpperCase() ?? "?";
}

/** Statements of a simple Query: its text split at semicolons outside quotes. */
function statementsOf(sql: string): string[] {
  const statements: string[] = [];
  let current = "";
  let quote: string | null = null;
  for (const character of sql) {
    if (quote !== null) {
      if (character === quote) quote = null;
    } else if (character === "'" || character === '"') {
      quote = character;
    } else if (character === ";") {
      if (current.trim() !== "") statements.push(current);
      current = "";
      continue;
    }
    current += character;
  }
  if (current.trim() !== "") statements.push(current);
  return statements;
}

export async function postgresCountingProxy(
  upstreamPort: number,
): Promise<CountingProxy<PostgresTraffic>> {
  const traffic: PostgresTraffic = { statements: 0, roundTrips: 0, byVerb: {}, connections: 0 };
  const count = (verb: string) => {
    traffic.statements++;
    traffic.byVerb[verb] = (traffic.byVerb[verb] ?? 0) + 1;
  };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    traffic.connections++;
    let pending: Buffer = Buffer.alloc(0);
    let started = false;
    const prepared = new Map<string, string>();
    const portals = new Map<string, string>();
    const cString = (body: Buffer, from: number): [string, number] => {
      const end = body.indexOf(0, from);
      return [body.toString("utf8", from, end), end + 1];
    };
    const onMessage = (type: string, body: Buffer) => {
      switch (type) {
        case "Q":
          traffic.roundTrips++;
          for (const statement of statementsOf(cString(body, 0)[0])) count(verbOf(statement));
          break;
        case "P": {
          const [name, next] = cString(body, 0);
          prepared.set(name, verbOf(cString(body, next)[0]));
          break;
        }
        case "B": {
          const [portal, next] = cString(body, 0);
          portals.set(portal, prepared.get(cString(body, next)[0]) ?? "?");
          break;
        }
        case "E":
          count(portals.get(cString(body, 0)[0]) ?? "?");
          break;
        case "S":
          traffic.roundTrips++;
          break;
      }
    };
    pipeThrough(
      client,
      upstreamPort,
      (chunk) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        for (;;) {
          if (!started) {
            // Untyped start-up messages: SSL or GSS requests (refused by a local server),
            // then the StartupMessage.
            if (pending.length < 8) return;
            const length = pending.readInt32BE(0);
            if (pending.length < length) return;
            const code = pending.readInt32BE(4);
            if (code !== SSL_REQUEST && code !== GSS_REQUEST) started = true;
            pending = pending.subarray(length);
            continue;
          }
          if (pending.length < 5) return;
          const length = pending.readInt32BE(1);
          if (pending.length < 1 + length) return;
          onMessage(String.fromCharCode(pending[0]!), pending.subarray(5, 1 + length));
          pending = pending.subarray(1 + length);
        }
      },
      sockets,
    );
  });
  const port = await listen(server);
  return {
    port,
    read: () => ({ ...traffic, byVerb: { ...traffic.byVerb } }),
    close: () => closeServer(server, sockets),
  };
}

export interface CountingProxiesThread {
  redisPort: number;
  postgresPort: number;
  read(): Promise<{ redis: RedisTraffic; postgres: PostgresTraffic }>;
  close(): Promise<void>;
}

const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

/** Both proxies on a worker thread (counting-proxies-thread.ts), read by message. */
export async function startCountingProxiesThread(
  redisPort: number,
  postgresPort: number,
): Promise<CountingProxiesThread> {
  const url = new URL(
    `./counting-proxies-thread.${RUNNING_FROM_SOURCE ? "ts" : "js"}`,
    import.meta.url,
  );
  // Under tsx a worker's entry cannot be TypeScript: it registers tsx, then imports.
  const entry = RUNNING_FROM_SOURCE
    ? `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
        .then((tsx) => tsx.register())
        .then(() => import(${JSON.stringify(url.href)}))`
    : `import(${JSON.stringify(url.href)})`;
  const worker = new Worker(entry, { eval: true, workerData: { redisPort, postgresPort } });
  const waiting = new Map<number, (message: ThreadAnswer) => void>();
  let next = 0;
  const ready = await new Promise<ThreadAnswer>((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", resolve);
  });
  worker.on("message", (message: ThreadAnswer) => {
    if (message.id === undefined) return;
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  const ask = (close: boolean) =>
    new Promise<ThreadAnswer>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      worker.postMessage({ id, close });
    });
  return {
    redisPort: ready.redisPort!,
    postgresPort: ready.postgresPort!,
    read: async () => {
      const answer = await ask(false);
      return { redis: answer.redis!, postgres: answer.postgres! };
    },
    close: async () => {
      await ask(true);
      await worker.terminate();
    },
  };
}

interface ThreadAnswer {
  id?: number;
  redisPort?: number;
  postgresPort?: number;
  redis?: RedisTraffic;
  postgres?: PostgresTraffic;
}
