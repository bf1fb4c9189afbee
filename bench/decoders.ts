/**
 * What the decoders one request reaches cost at their worst (docs/cost-bounds.md): each at
 * the largest input a 1 MiB body can carry, on one thread, the median of `--runs` (default 5).
 * The quadratic did:key decoding the service had before issue 22 is timed beside it, on
 * shorter inputs (it takes seconds from 128,000 digits on).
 *
 *   node --import tsx bench/decoders.ts [--runs 5]
 *
 * test/verifier/crypto/cost-bounds.test.ts checks the answers at the same sizes; this only
 * times them.
 */
import { parseArgs } from "node:util";
import { parseOtsProof } from "../src/verifier/anchor/ots.js";
import { pyB64uDecode } from "../src/verifier/crypto/base64.js";
import { base58Decode, didKeyToPublicKey } from "../src/verifier/crypto/did-key.js";
import { parseJson } from "../src/verifier/json/parse.js";
import { isValidTimestamp } from "../src/verifier/timestamps.js";
import { otsProof, sha256 } from "./support/ots.js";

const MIB = 1024 * 1024;
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** The decoding before issue 22: one BigInt multiplication per digit. */
function bigIntBase58(text: string): bigint {
  let n = 0n;
  for (const ch of text) n = n * 58n + BigInt(ALPHABET.indexOf(ch));
  return n;
}

function median(runs: number, work: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    try {
      work();
    } catch {
      // A refusal is the answer being timed.
    }
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

function main(): void {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
  const runs = Number(values.runs);
  const rows: [string, number][] = [];
  const time = (name: string, work: () => unknown, times = runs) =>
    rows.push([name, median(times, work)]);

  for (const digits of [16_000, 64_000, 128_000]) {
    time(`did:key, ${digits} digits, before (BigInt)`, () => bigIntBase58("z".repeat(digits)), 1);
  }
  const bomb = `did:key:z${"z".repeat(MIB)}`;
  time("did:key, 1 MiB, now (length check)", () => didKeyToPublicKey(bomb));
  time("base58, 1,024 digits (its bound)", () => base58Decode("z".repeat(1024)));
  time("base64 signature, 1 MiB of junk", () => pyB64uDecode("A!".repeat(MIB / 2)));
  time("JSON, 1 MiB of '['", () => parseJson("[".repeat(MIB)));
  time("JSON, 240 integers of 4,300 digits", () =>
    parseJson(`[${Array(240).fill("9".repeat(4300)).join(",")}]`),
  );
  time("JSON, a 1 MiB float", () => parseJson(`0.${"1".repeat(MIB)}`));
  time("timestamp, 1 MiB string", () => isValidTimestamp(`2026-01-01T00:00:00Z${"9".repeat(MIB)}`));
  const calendars = Array.from({ length: 9_999 }, (_, i) => `https://c${i}.example`);
  const proof = otsProof(sha256("bench"), { calendars });
  time(`OTS proof, 9,999 leaves (${proof.length} bytes)`, () => parseOtsProof(proof));

  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(`decoder worst cases (median of ${runs}; the BigInt rows: one run)`);
  for (const [name, ms] of rows) console.log(`  ${name.padEnd(width)}  ${ms.toFixed(2)} ms`);
}

main();
