/**
 * Issue 22, finding 6: how many evaluation keys one actor with many addresses takes in a day,
 * and what its proof of work costs. The actor holds `--addresses` loopback addresses spread
 * over `--networks` /24s (127.0.N.x); from each it asks for keys until refused, solving every
 * challenge at the difficulty the challenge states, with OpenSSL's SHA-256 in this process.
 * Then a bystander in another /24 asks for one key.
 *
 *   node --import tsx bench/evaluation-keys-actor.ts [--addresses 100] [--networks 4]
 *        [--checkout /path/to/other/build ...] [--no-local]
 *
 * Reported per build: keys obtained, the difficulties met, the hashes tried and this
 * process's CPU seconds solving, and the bystander's answer. Bounded: at most 3 attempts per
 * address, `--addresses` ≤ 250.
 */
import { request } from "node:http";
import { parseArgs } from "node:util";
import { nodeSha256 } from "../src/access/evaluation/node-sha256.js";
import { solveProofOfWork } from "../src/portable/proof-of-work.js";
import { startServiceProcess } from "./service-process.js";

const ATTEMPTS_PER_ADDRESS = 3;

interface Answer {
  status: number;
  body: string;
}

function call(origin: string, localAddress: string, method: string, path: string, body?: string) {
  const url = new URL(origin);
  return new Promise<Answer>((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method,
        localAddress,
        agent: false,
        headers: body === undefined ? {} : { "content-type": "application/json" },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
        response.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

interface Tally {
  keys: number;
  hashes: number;
  cpuSeconds: number;
  difficulties: Map<number, number>;
  refusals: Map<string, number>;
}

/** One key for `address`: a challenge, its work, the issuance; the answer's code. */
async function oneKey(origin: string, address: string, tally: Tally): Promise<string> {
  const challenge = await call(origin, address, "GET", "/keys/evaluation/challenge");
  if (challenge.status !== 200) return `challenge ${challenge.status}`;
  const { challenge: token, difficulty } = JSON.parse(challenge.body) as {
    challenge: string;
    difficulty: number;
  };
  const cpu = process.cpuUsage();
  // The solver tries the decimal counter from 0 without a prefix: the nonce is the count.
  const nonce = solveProofOfWork(nodeSha256, token, difficulty) ?? "";
  const attempts = Number(nonce) + 1;
  const used = process.cpuUsage(cpu);
  tally.cpuSeconds += (used.user + used.system) / 1e6;
  tally.hashes += attempts;
  const issued = await call(
    origin,
    address,
    "POST",
    "/keys/evaluation",
    JSON.stringify({ challenge: token, nonce }),
  );
  if (issued.status === 201) {
    tally.keys += 1;
    tally.difficulties.set(difficulty, (tally.difficulties.get(difficulty) ?? 0) + 1);
    return "201";
  }
  return `${issued.status} ${(JSON.parse(issued.body) as { error?: string }).error ?? ""}`;
}

async function measure(label: string, checkout: string | undefined, addresses: string[]) {
  const service = await startServiceProcess({
    distributed: false,
    env: {},
    ...(checkout === undefined ? {} : { checkout }),
  });
  try {
    const tally: Tally = {
      keys: 0,
      hashes: 0,
      cpuSeconds: 0,
      difficulties: new Map(),
      refusals: new Map(),
    };
    const started = performance.now();
    for (const address of addresses) {
      for (let attempt = 0; attempt < ATTEMPTS_PER_ADDRESS; attempt += 1) {
        const outcome = await oneKey(service.origin, address, tally);
        if (outcome === "201") continue;
        tally.refusals.set(outcome, (tally.refusals.get(outcome) ?? 0) + 1);
        break;
      }
    }
    const wall = (performance.now() - started) / 1000;
    const bystander = await oneKey(service.origin, "127.0.200.1", {
      keys: 0,
      hashes: 0,
      cpuSeconds: 0,
      difficulties: new Map(),
      refusals: new Map(),
    });
    const bits = [...tally.difficulties]
      .sort(([a], [b]) => a - b)
      .map(([difficulty, count]) => `${difficulty} bits ×${count}`)
      .join(", ");
    console.log(`\n${label}`);
    console.log(
      `  actor: ${tally.keys} keys in ${wall.toFixed(1)} s; ${bits}; ` +
        `${(tally.hashes / 1e6).toFixed(1)} M hashes, ${tally.cpuSeconds.toFixed(1)} CPU-s solving`,
    );
    console.log(
      `  refused with: ${[...tally.refusals].map(([code, count]) => `${code} ×${count}`).join(", ")}`,
    );
    console.log(`  a bystander (127.0.200.1) asking for a key: ${bystander}`);
  } finally {
    await service.stop();
  }
}

const { values } = parseArgs({
  options: {
    addresses: { type: "string", default: "100" },
    networks: { type: "string", default: "4" },
    checkout: { type: "string", multiple: true, default: [] },
    "no-local": { type: "boolean", default: false },
  },
});
const count = Number(values.addresses);
const networks = Number(values.networks);
if (!Number.isSafeInteger(count) || count < 1 || count > 250) throw new Error("--addresses 1–250");
if (!Number.isSafeInteger(networks) || networks < 1 || networks > 100) {
  throw new Error("--networks 1–100");
}
const perNetwork = Math.ceil(count / networks);
const addresses = Array.from(
  { length: count },
  (_, index) => `127.0.${1 + Math.floor(index / perNetwork)}.${1 + (index % perNetwork)}`,
);
console.log(`evaluation keys: one actor, ${count} addresses over ${networks} /24s (127.0.N.x)`);
if (!values["no-local"]) await measure("this build", undefined, addresses);
for (const checkout of values.checkout) await measure(checkout, checkout, addresses);
