/**
 * `receiptd serve [--host HOST] [--port PORT]`: runs the HTTP service. Configuration comes
 * from the environment (service.md §13); the flags override `HOST` and `PORT`.
 */
import { ConfigError, loadConfig, type ServiceConfig } from "../service/config.js";
import { environmentHelp } from "../service/config-reference.js";
import { startServer } from "../service/server.js";
import { type CliIo, processIo } from "./entry.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd serve [--host HOST] [--port PORT]";

const HELP = `${USAGE}

Runs the verification service until SIGTERM or SIGINT (a second signal stops at once).
It logs one startup line (mode, address, data dir, issuer, payments, corpus, metrics) and
writes DATA_DIR/server.json, which \`receiptd keys create\` reads to tell whether it shares
this server's DATA_DIR.

${environmentHelp("serve")}`;

/** Resolves once the server listens; the process then lives until the server closes. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: {
      host: { type: "string" },
      port: { type: "string" },
    },
    usage: USAGE,
    help: HELP,
  });
  if (typeof parsed === "number") return parsed;
  const flags = parsed.values;
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
