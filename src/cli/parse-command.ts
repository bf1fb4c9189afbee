/**
 * The prologue the operator commands share: parse the options, answer `--help`, and turn a
 * parseArgs refusal into the one usage line plus the usage text, exit 2 (`entry.ts`).
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { type CliIo, isParseArgsError, usageErrorText } from "./entry.js";

type Options = NonNullable<ParseArgsConfig["options"]> & {
  help: { type: "boolean"; short: "h" };
};

interface CommandConfig<O extends Options, P extends boolean> {
  options: O;
  allowPositionals: P;
  /** Printed after a usage error (a newline is added). */
  usage: string;
  /** Printed as it is for `--help`/`-h`. */
  help: string;
}

/** The parsed command line, or the exit code when the command is already answered. */
export function parseCommand<O extends Options, P extends boolean>(
  argv: string[],
  io: CliIo,
  command: CommandConfig<O, P>,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: P }>> | number {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: P }>>;
  try {
    parsed = parseArgs({
      args: argv,
      options: command.options,
      allowPositionals: command.allowPositionals,
    });
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    io.stderr(`error: ${usageErrorText(error)}\n${command.usage}\n`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    io.stdout(command.help);
    return 0;
  }
  return parsed;
}
