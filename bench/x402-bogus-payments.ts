/**
 * Issue 22, finding 7: what bogus x402 payments cost everyone else. One attacking address
 * sends well-formed payments whose signature is by another key than `from` (so each one, if
 * admitted, costs EIP-712 hashing and ecrecover on the main thread) at a fixed rate, open
 * loop, from a child process; meanwhile one honest client verifies a bundle with an API key,
 * closed loop. Reported: the honest `POST /verify` latency alone and during the attack, the
 * attack's achieved rate and its answers, and the web process's CPU time during the attack
 * (the steadier figure on a shared machine).
 *
 *   node --import tsx bench/x402-bogus-payments.ts [--rate 500] [--seconds 10]
 *        [--checkout /path/to/other/build ...] [--no-local]
 *
 * Each `--checkout` (a checkout with `dist/` built, e.g. a worktree of the landed commit) is
 * measured after this one, in the same run, with the same settings, so the figures compare
 * side by side (`--no-local` leaves this checkout's source out, so that built checkouts alone
 * are compared, each from its `dist/`). Bounded: `--rate` × `--seconds` attack requests per build (at most 2,000/s ×
 * 60 s), one honest connection. Timings on a shared machine are noisy: compare ratios.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { transferWithAuthorizationTypedData } from "../src/payments/eip3009.js";
import type { Hex } from "../src/payments/formats.js";
import { requirementFromWire } from "../src/payments/requirements.js";
import { fromPlain } from "../src/verifier/json/value.js";
import { generatedBundle } from "./fixtures.js";
import { Http1Connection } from "./http1-connection.js";
import { runLoad } from "./load.js";
import { startServiceProcess } from "./service-process.js";

const BOGUS_POOL = 32;
/** The attacker's keep-alive connections: enough for 500/s at 250 ms an answer. */
const ATTACK_CONNECTIONS = 128;
/** A one-receipt bundle (fixtures.ts): the honest client's request, and the attacker's body. */
const HONEST_BUNDLE = Buffer.from(generatedBundle(1));
const PAYMENTS_ENV = {
  X402_PAY_TO: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  // Nothing listens there: a bogus payment never gets as far as the facilitator.
  FACILITATOR_URL: "http://127.0.0.1:9/",
};

/** `PAYMENT-SIGNATURE` headers, well formed, each signed by a key that is not its `from`. */
async function bogusPayments(origin: string): Promise<string[]> {
  const challenge = await fetch(`${origin}/verify`, { method: "POST", body: "{}" });
  await challenge.arrayBuffer();
  const header = challenge.headers.get("payment-required");
  if (challenge.status !== 402 || header === null) throw new Error("no x402 challenge");
  const accepted = (
    JSON.parse(Buffer.from(header, "base64").toString("utf8")) as {
      accepts: Record<string, unknown>[];
    }
  ).accepts[0];
  if (accepted === undefined) throw new Error("the challenge offers nothing");
  const requirement = requirementFromWire(fromPlain(accepted), 2);
  const nowS = BigInt(Math.floor(Date.now() / 1000));
  const claimed = privateKeyToAccount(generatePrivateKey()).address;
  const headers: string[] = [];
  for (let index = 0; index < BOGUS_POOL; index += 1) {
    const signer = privateKeyToAccount(generatePrivateKey());
    const authorization = {
      from: claimed,
      to: requirement.payTo,
      value: requirement.amount,
      validAfter: nowS - 600n,
      validBefore: nowS + 3600n,
      nonce: `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}` as Hex,
    };
    const signature = await signer.signTypedData(
      transferWithAuthorizationTypedData(requirement, authorization),
    );
    const payment = {
      x402Version: 2,
      resource: { url: `${origin}/verify` },
      accepted,
      payload: {
        signature,
        authorization: {
          ...authorization,
          value: authorization.value.toString(),
          validAfter: authorization.validAfter.toString(),
          validBefore: authorization.validBefore.toString(),
        },
      },
    };
    headers.push(Buffer.from(JSON.stringify(payment), "utf8").toString("base64"));
  }
  return headers;
}

interface AttackReport {
  sent: number;
  answered: number;
  seconds: number;
  statuses: Record<string, number>;
}

/** The attacker, in a child process: `rate` payments a second for `seconds`, open loop. */
async function attack(origin: string, poolFile: string, rate: number, seconds: number) {
  const pool = JSON.parse(readFileSync(poolFile, "utf8")) as string[];
  const connections = Array.from(
    { length: ATTACK_CONNECTIONS },
    () => new Http1Connection(origin, 30_000),
  );
  const idle = [...connections];
  const statuses: Record<string, number> = {};
  let scheduled = 0;
  let sent = 0;
  let answered = 0;
  const started = performance.now();
  const stopAt = started + seconds * 1000;
  const fire = () => {
    const connection = idle.pop();
    // All busy: the service answers slower than the rate; that request is not sent.
    if (connection === undefined) {
      statuses["not sent (all connections busy)"] =
        (statuses["not sent (all connections busy)"] ?? 0) + 1;
      return;
    }
    const header = pool[sent % pool.length] as string;
    sent += 1;
    connection
      .request({
        method: "POST",
        path: "/verify",
        headers: { "payment-signature": header, "content-type": "application/json" },
        body: HONEST_BUNDLE,
      })
      .then(
        (answer) => {
          answered += 1;
          let code = "";
          try {
            code = (JSON.parse(answer.body) as { error?: string }).error ?? "";
          } catch {}
          const key = `${answer.status} ${code}`;
          statuses[key] = (statuses[key] ?? 0) + 1;
        },
        () => {
          statuses.failed = (statuses.failed ?? 0) + 1;
        },
      )
      .finally(() => idle.push(connection));
  };
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const due = Math.floor(((performance.now() - started) / 1000) * rate);
      for (; scheduled < due; scheduled += 1) fire();
      if (performance.now() >= stopAt) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  for (const connection of connections) connection.close();
  const report: AttackReport = {
    sent,
    answered,
    seconds: (performance.now() - started) / 1000,
    statuses,
  };
  process.stdout.write(JSON.stringify(report));
}

function startAttack(origin: string, poolFile: string, rate: number, seconds: number) {
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "--attack",
      origin,
      "--pool",
      poolFile,
      "--rate",
      String(rate),
      "--seconds",
      String(seconds),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  return new Promise<AttackReport>((resolve, reject) => {
    child.on("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(output) as AttackReport)
        : reject(new Error(`attack ${code}`)),
    );
  });
}

async function honest(origin: string, apiKey: string, seconds: number) {
  const result = await runLoad({
    origin,
    connections: 1,
    warmupMs: 500,
    durationMs: seconds * 1000,
    request: () => ({
      method: "POST",
      path: "/verify",
      headers: { "x-svc-key": apiKey, "content-type": "application/json" },
      body: HONEST_BUNDLE,
    }),
    accept: (status) => status === 200,
  });
  return `p50 ${result.latencyMs.p50.toFixed(1)} ms, p95 ${result.latencyMs.p95.toFixed(1)} ms, ${result.requests} requests, ${result.errors} errors`;
}

/** CPU seconds the process has used so far (user + system, from /proc; 100 ticks a second). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure(label: string, checkout: string | undefined, rate: number, seconds: number) {
  const service = await startServiceProcess({
    distributed: false,
    env: PAYMENTS_ENV,
    ...(checkout === undefined ? {} : { checkout }),
  });
  const scratch = mkdtempSync(join(tmpdir(), "receiptd-bogus-"));
  try {
    const poolFile = join(scratch, "pool.json");
    writeFileSync(poolFile, JSON.stringify(await bogusPayments(service.origin)));
    const alone = await honest(service.origin, service.apiKey, Math.min(5, seconds));
    const cpuBefore = cpuSeconds(service.pids.web);
    const attacking = startAttack(service.origin, poolFile, rate, seconds + 1.5);
    // Let the attack reach its rate before measuring.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const during = await honest(service.origin, service.apiKey, seconds);
    const report = await attacking;
    const cpuDuring = cpuSeconds(service.pids.web) - cpuBefore;
    console.log(`\n${label}`);
    console.log(`  honest POST /verify alone:          ${alone}`);
    console.log(`  honest POST /verify during attack:  ${during}`);
    console.log(
      `  attack: ${(report.sent / report.seconds).toFixed(0)}/s sent, ${report.answered} answered: ${Object.entries(
        report.statuses,
      )
        .map(([status, count]) => `${status} ×${count}`)
        .join(", ")}`,
    );
    console.log(
      `  web process CPU during the attack (main thread and workers, honest load included): ${cpuDuring.toFixed(1)} s in ${report.seconds.toFixed(1)} s`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await service.stop();
  }
}

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "10" },
    checkout: { type: "string", multiple: true, default: [] },
    "no-local": { type: "boolean", default: false },
    attack: { type: "string" },
    pool: { type: "string" },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
if (!Number.isFinite(rate) || rate < 1 || rate > 2000) throw new Error("--rate is 1–2000");
if (!Number.isFinite(seconds) || seconds < 1 || seconds > 60) throw new Error("--seconds is 1–60");

if (values.attack !== undefined && values.pool !== undefined) {
  await attack(values.attack, values.pool, rate, seconds);
} else {
  console.log(
    `bogus x402 payments: ${rate}/s from one address for ${seconds} s, one honest keyed client`,
  );
  if (!values["no-local"]) await measure("this build", undefined, rate, seconds);
  for (const checkout of values.checkout) await measure(checkout, checkout, rate, seconds);
}
