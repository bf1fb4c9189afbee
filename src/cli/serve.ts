/**
 * `receiptd serve [--host HOST] [--port PORT]`: runs the HTTP service. Configuration comes
 * from the environment (service.md §13); the flags override `HOST` and `PORT`.
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type ServiceConfig } from "../service/config.js";
import { environmentHelp } from "../service/config-reference.js";
import { startServer } from "../service/server.js";
import { type CliIo, isParseArgsError, processIo, usageErrorText } from "./entry.js";

export const USAGE = "usage: receiptd serve [--host HOST] [--port PORT]";

const HELP = `${USAGE}

Runs the verification service until SIGTERM or SIGINT (a second signal stops at once).
It logs one startup line (mode, address, data dir, issuer, payments, corpus, metrics) and
writes DATA_DIR/server.json, which \`receiptd keys create\` reads to tell whether it shares
this server's DATA_DIR.

${environmentHelp("serve")}`;

function parseCommandLine(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: false,
  }).values;
}

/** Resolves once the server listens; the process then lives until the server closes. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let flags: ReturnType<typeof parseCommandLine>;
  try {
    flags = parseCommandLine(argv);
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    io.stderr(`error: ${usageErrorText(error)}\n${USAGE}\n`);
    return 2;
  }
  if (flags.help) {
    io.stdout(HELP);
    return 0;
  }
  const env = { ...process.env };
  if (flags.host !== undefined) env.HOST = flags.host;
  if (flags.port !== undefined) env.PORT = flags.port;
  let config: ServiceConfig;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
  try {
    await startServer(config);
  } catch (error) {
    const hint = addressInUseHint(error, config);
    if (hint === null) throw error;
    io.stderr(`error: ${hint}\n`);
    return 2;
  }
  return 0;
}

/** For a port already taken, which setting moves it: PORT, or METRICS_PORT for /metrics. */
function addressInUseHint(error: unknown, config: ServiceConfig): string | null {
  if (!(error instanceof Error) || !("code" in error) || error.code !== "EADDRINUSE") return null;
  const port = "port" in error ? Number(error.port) : Number.NaN;
  const address = "address" in error ? String(error.address) : config.host;
  const metrics = config.metrics !== null && port === config.metrics.port && port !== config.port;
  const setting = metrics ? "METRICS_PORT" : "PORT (or --port)";
  return (
    `${address}:${port} is already in use (another receiptd?): stop that process, ` +
    `or set ${setting} to a free port`
  );
}
