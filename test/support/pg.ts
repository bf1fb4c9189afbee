/**
 * Test support for the PostgreSQL store: the database URL (shared by everyone, CI included,
 * hence a private schema per test) and a proxy that stages outages in front of it.
 */
import { randomBytes } from "node:crypto";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";

export const DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const target = new URL(DATABASE_URL);

export function privateSchema(): string {
  return `receiptd_test_${randomBytes(6).toString("hex")}`;
}

/** A direct connection (never through a test proxy) to inspect and clean up. */
export async function withAdmin<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withAdmin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A document's stored bytes, read directly from the table. */
export async function rowBody(
  schema: string,
  collection: string,
  id: string,
): Promise<Buffer | null> {
  return withAdmin(async (client) => {
    const result = await client.query<{ body: Buffer }>(
      `SELECT body FROM "${schema}".documents WHERE collection = $1 AND id = $2`,
      [collection, id],
    );
    return result.rows[0]?.body ?? null;
  });
}

/**
 * A TCP proxy between a store and PostgreSQL. The shared server must never be stopped, so
 * an outage is staged here instead: `cut()` destroys every connection and stops listening
 * (the client sees connections drop, then refusals, as in a database restart), `restore()`
 * listens again on the same port. `mode` can also swallow traffic without closing anything,
 * as a network partition does.
 */
export class TcpProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #port = 0;
  /** pass: forward both ways; drop-replies: forward requests only; blackhole: forward none. */
  mode: "pass" | "drop-replies" | "blackhole" = "pass";
  #onDropped: (() => void) | undefined;
  /** While stalled (`stall()`), the bytes held in both directions, in order, until `release()`. */
  #held: (() => void)[] | null = null;
  /** Chunks held since the proxy was last stalled (every connection, both directions). */
  heldChunks = 0;

  constructor() {
    this.#server = createServer((client) => this.#accept(client));
  }

  get url(): string {
    const url = new URL(DATABASE_URL);
    url.hostname = "127.0.0.1";
    url.port = String(this.#port);
    return url.href;
  }

  /** Resolves when the proxy next swallows bytes the store sent. */
  requestDropped(): Promise<void> {
    return new Promise((resolve) => {
      this.#onDropped = resolve;
    });
  }

  #accept(client: Socket): void {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (chunk) => {
      if (this.#hold(() => upstream.write(chunk))) return;
      if (this.mode === "blackhole") {
        this.#onDropped?.();
        this.#onDropped = undefined;
      } else {
        upstream.write(chunk);
      }
    });
    upstream.on("data", (chunk) => {
      if (this.#hold(() => client.write(chunk))) return;
      if (this.mode === "pass") client.write(chunk);
    });
  }

  #hold(forward: () => void): boolean {
    if (this.#held === null) return false;
    this.#held.push(forward);
    this.heldChunks += 1;
    return true;
  }

  /**
   * A stalled server, as SIGSTOP makes one: connections stay open and new ones are accepted,
   * but nothing goes through in either direction; bytes are held, not dropped.
   */
  stall(): void {
    this.#held ??= [];
    this.heldChunks = 0;
  }

  /** Forwards every held byte, in order (a resumed server runs what it had received). */
  release(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (const forward of held) forward();
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(this.#port, "127.0.0.1", () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  async restore(): Promise<void> {
    this.mode = "pass";
    await this.listen();
  }
}
