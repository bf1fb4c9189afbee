/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a child process (a service, a
 * private Redis) that must be told its port before it starts. The port is only free until
 * someone else takes it, so callers start their process promptly. Shared by the bench and the
 * tests (bench/ may not import test/, the tests may import bench/).
 */
import { once } from "node:events";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
