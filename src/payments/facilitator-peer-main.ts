/**
 * `npm run dev:facilitator`: runs the local facilitator stand-in (facilitator-peer.ts) until
 * interrupted. `FACILITATOR_PEER_HOST` / `FACILITATOR_PEER_PORT` choose the address
 * (default 127.0.0.1:4021); point the service's `FACILITATOR_URL` at the printed URL.
 */
import { startFacilitatorPeer } from "./facilitator-peer.js";

const DEFAULT_PORT = 4021;

function portFrom(text: string | undefined): number {
  if (text === undefined || text === "") return DEFAULT_PORT;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) {
    throw new Error(`FACILITATOR_PEER_PORT must be a port number, got '${text}'`);
  }
  return port;
}

async function main(): Promise<void> {
  const peer = await startFacilitatorPeer({
    host: process.env.FACILITATOR_PEER_HOST || "127.0.0.1",
    port: portFrom(process.env.FACILITATOR_PEER_PORT),
  });
  process.stdout.write(
    `x402 facilitator stand-in (no chain, no money moves) listening on ${peer.url}\n` +
      `use FACILITATOR_URL=${peer.url}\n`,
  );
  const stop = () => {
    peer.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`facilitator peer: ${(error as Error).message}\n`);
  process.exit(1);
});
