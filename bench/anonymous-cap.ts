/**
 * Measures issue 32's finding 6 against a real `receiptd serve`: can a dozen addresses spend
 * the anonymous daily cap, and does a fresh address still get its evaluation-key challenge?
 *
 *   node --import tsx bench/anonymous-cap.ts [--checkout DIR] [--distributed]
 *
 * Three floods, one after another, each of 12 addresses × 250 keyless GETs (one keep-alive
 * connection per address, bound to a loopback source address, so each address is a
 * different client to the service): `/info` from one /24 (the issue's attack), `GET /notarize`
 * from the same /24, then `GET /notarize` from 12 other /24s. After each, a fresh address of
 * yet another /24 asks for `/keys/evaluation/challenge`. Prints one JSON report: the answers
 * by status per flood and the fresh address's status. `--checkout` runs another checkout's
 * build (e.g. main) instead, to compare side by side.
 */
import { Agent, request } from "node:http";
import { parseArgs } from "node:util";
import { startServiceProcess } from "./service-process.js";

const ADDRESSES = 12;
const CALLS_PER_ADDRESS = 250;

function get(origin: string, path: string, agent: Agent, localAddress: string): Promise<number> {
  return new Promise((resolve) => {
    const client = request(`${origin}${path}`, { agent, localAddress }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    client.on("error", () => resolve(0));
    client.end();
  });
}

async function flood(origin: string, path: string, addresses: string[]) {
  const statuses: Record<string, number> = {};
  const started = performance.now();
  await Promise.all(
    addresses.map(async (localAddress) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      for (let call = 0; call < CALLS_PER_ADDRESS; call += 1) {
        const status = String(await get(origin, path, agent, localAddress));
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
      agent.destroy();
    }),
  );
  return { path, statuses, seconds: Number(((performance.now() - started) / 1000).toFixed(2)) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      checkout: { type: "string" },
      distributed: { type: "boolean", default: false },
    },
  });
  const service = await startServiceProcess({
    distributed: values.distributed,
    ...(values.checkout === undefined ? {} : { checkout: values.checkout }),
  });
  try {
    const { origin } = service;
    const oneNetwork = Array.from({ length: ADDRESSES }, (_, i) => `127.0.1.${i + 1}`);
    const manyNetworks = Array.from({ length: ADDRESSES }, (_, i) => `127.0.${10 + i}.1`);
    const fresh = (n: number) =>
      get(origin, "/keys/evaluation/challenge", new Agent(), `127.0.${100 + n}.1`);
    const floods = [];
    floods.push({ ...(await flood(origin, "/info", oneNetwork)), fresh_challenge: await fresh(1) });
    floods.push({
      ...(await flood(origin, "/notarize", oneNetwork)),
      fresh_challenge: await fresh(2),
    });
    floods.push({
      ...(await flood(origin, "/notarize", manyNetworks)),
      fresh_challenge: await fresh(3),
    });
    const report = {
      build: values.checkout ?? "this checkout",
      mode: values.distributed ? "distributed" : "embedded",
      addresses: ADDRESSES,
      calls_per_address: CALLS_PER_ADDRESS,
      floods,
      fresh_info: await get(origin, "/info", new Agent(), "127.0.200.1"),
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await service.stop();
  }
}

await main();
