#!/usr/bin/env node
/**
 * `receiptd`: the project CLI. Each subcommand delegates to the module that owns it, so
 * `receiptd verify` and `continuity-receipt-verify` are one piece of code.
 */
import { VERIFIER_VERSION } from "../verifier/version.js";
import { isEntryPoint, processIo, runMain } from "./entry.js";

interface Subcommand {
  summary: string;
  usage: string;
  run: (argv: string[]) => Promise<number>;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  verify: {
    summary:
      "verify a Continuity Receipt bundle, or many in bulk, locally or remotely (exit 0 iff all TRUSTED)",
    usage:
      "receiptd verify <bundle> [--require-anchor] [--revocations PATH|URL]... | verify <file|dir|-> ... [--ndjson] [--jobs N] [--remote URL [--key K]] [--out FILE [--resume]] [--require-anchor] [--summary] [--full]",
    run: async (argv) => (await import("./bulk/main.js")).main(argv, processIo, "receiptd verify"),
  },
  "verify-receipt": {
    summary: "verify a signed verification receipt (exit 0 iff valid)",
    usage:
      "receiptd verify-receipt <receipt> [--bundle P] [--revocations P|URL]... [--digest] [--canonical P]",
    run: async (argv) =>
      (await import("./continuity-receipt-verify-receipt.js")).main(
        argv,
        processIo,
        "receiptd verify-receipt",
      ),
  },
  serve: {
    summary: "run the HTTP verification service (configured by environment; see --help)",
    usage: "receiptd serve [--host HOST] [--port PORT]",
    run: async (argv) => (await import("./serve.js")).main(argv),
  },
  worker: {
    summary: "run the BullMQ queue workers of distributed mode (REDIS_URL; see --help)",
    usage: "receiptd worker",
    run: async (argv) => (await import("./worker.js")).main(argv),
  },
  anchor: {
    summary: "verify an OpenTimestamps proof against block headers (exit 0 iff verified)",
    usage:
      "receiptd anchor verify <proof> (--digest D | --bundle B --target RID) [--header HEX --height N]... [--headers FILE]... [--json]",
    run: async (argv) =>
      (await import("./continuity-receipt-anchor.js")).main(argv, processIo, "receiptd anchor"),
  },
  notarization: {
    summary:
      "check a context notarization offline (exit 0 iff valid); expire stored ones past NOTARIZATION_TTL_DAYS",
    usage:
      "receiptd notarization verify <file> [--key DID]... [--revocations P|URL]... [--expect-digest D] | expire [--dry-run]",
    run: async (argv) => (await import("./notarization.js")).main(argv),
  },
  revocations: {
    summary: "import a revocation document into the store served at /revocations/{issuer}",
    usage: "receiptd revocations import FILE",
    run: async (argv) => (await import("./revocations.js")).main(argv),
  },
  "rotate-key": {
    summary: "replace the service signing key and publish the old issuer's revocation",
    usage: "receiptd rotate-key",
    run: async (argv) => (await import("./rotate-key.js")).main(argv),
  },
  keys: {
    summary: "create, list and revoke API keys (the key is shown once, stored as SHA-256)",
    usage:
      "receiptd keys create --name N [--cap C] [--plan P] [--json | --key-only] | keys list [--all] [--json] | keys revoke <key or name>",
    run: async (argv) => (await import("./keys.js")).main(argv),
  },
  crystals: {
    summary:
      "seal plaintext into a memory crystal envelope, open one, make keys and tenant hashes; expire old crystals",
    usage:
      "receiptd crystals keygen --out K | tenant --secret-file F | seal --key-file K --tenant T [--parent P] [--cipher C] [--metadata JSON] [--created-at T] < in | open --key-file K < envelope | expire [--dry-run]",
    run: async (argv) => (await import("./crystals.js")).main(argv),
  },
  conformance: {
    summary: "run a verifier over the conformance corpus, have it graded, check the signed report",
    usage:
      "receiptd conformance run [--cli PATH] [--receipt-cli PATH] [--corpus DIR] [--referee URL [--key KEY]] [--name N] [--language L] [--impl-version V] [--url URL] [--concurrency N] [--timeout S] [--submission FILE] [--report FILE] (see --help)",
    run: async (argv) => (await import("./conformance.js")).main(argv),
  },
  admin: {
    summary: "tear a deployment's shared state down: a Redis key prefix, a PostgreSQL schema",
    usage: "receiptd admin purge [--prefix PREFIX] [--schema SCHEMA] [--yes]",
    run: async (argv) => (await import("./admin.js")).main(argv),
  },
  "systemd-units": {
    summary: "write systemd units for the Procfile's processes (web, worker) of this installation",
    usage:
      "receiptd systemd-units [--dir DIR] [--node PATH] [--user USER] [--env-file FILE] [--out DIR]",
    run: async (argv) => (await import("./systemd-units.js")).main(argv),
  },
  billing: {
    summary: "print the monthly per-key statement metered from the audit files",
    usage: "receiptd billing --month YYYY-MM [--audit DIR] [--json]",
    run: async (argv) => (await import("./billing.js")).main(argv),
  },
  audit: {
    summary:
      "compress closed audit days and remove those past AUDIT_RETENTION_DAYS (web processes do it hourly)",
    usage: "receiptd audit compact [--audit DIR] [--dry-run]",
    run: async (argv) => (await import("./audit.js")).main(argv),
  },
};

export function helpText(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((name) => name.length));
  const lines = Object.entries(SUBCOMMANDS).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  );
  const usages = Object.values(SUBCOMMANDS).map((command) => `  ${command.usage}`);
  return [
    `receiptd ${VERIFIER_VERSION} — Continuity Receipt verification service and tools`,
    "",
    "usage: receiptd <command> [arguments]",
    "",
    "commands:",
    ...lines,
    "",
    "arguments:",
    ...usages,
    "",
    "Every command takes --help. Exit codes: 0 success (TRUSTED / valid / verified), 1 a negative",
    "result (a bundle that is not JSON is one: UNTRUSTED malformed), 2 a usage error or a file",
    "that cannot be read.",
    "",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(helpText());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version") {
    process.stdout.write(`${VERIFIER_VERSION}\n`);
    return 0;
  }
  const command = SUBCOMMANDS[name];
  if (command === undefined) {
    process.stderr.write(`receiptd: unknown command '${name}'\n\n${helpText()}`);
    return 2;
  }
  return command.run(rest);
}

if (isEntryPoint(import.meta.url)) runMain(main);
