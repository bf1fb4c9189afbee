/**
 * Loading the service's configuration for a command that reads it but serves nothing (audit,
 * billing): a wrong setting is the operator's input error, so it is one `error:` line and exit
 * status 2, like a wrong argument, never a stack trace.
 */
import type { Env } from "../io/env.js";
import { ConfigError, loadConfig, type ServiceConfig } from "../service/config.js";
import type { CliIo } from "./entry.js";

/** The configuration, or `undefined` once the reason it cannot be loaded is on stderr. */
export function configOrReport(env: Env, io: CliIo): ServiceConfig | undefined {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return undefined;
  }
}
