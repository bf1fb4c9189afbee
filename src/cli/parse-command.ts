/**
 * The one command-line prologue of the CLIs: parse the options, answer `--help`, read the
 * parsed line into the command's request, and turn a refusal of either (a parseArgs
 * `ERR_PARSE_ARGS_*` or a `CliUsageError`) into the one usage line plus the usage text,
 * exit 2 (`entry.ts`). Commands with actions that take their own options (`keys create`,
 * `admin purge`) pick the action with `parseAction` and parse the rest with `parseCommand`.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { codedErrorClass } from "../verifier/coded-error.js";
import { type CliIo, isParseArgsError, usageErrorText } from "./entry.js";

/** A command line the command cannot run: one line, the usage text, exit 2. */
export class CliUsageError extends codedErrorClass("usage") {}

export type CommandOptions = NonNullable<ParseArgsConfig["options"]>;

/** Every command takes `--help`/`-h`; its options need not say so. */
const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;

/** What parseArgs makes of a command line under `options` (and `--help`). */
export type ParsedLine<O extends CommandOptions, P extends boolean> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION; allowPositionals: P }>
>;

interface CommandText {
  /** Printed after a usage error (a newline is added). */
  usage: string;
  /** Printed as it is for `--help`/`-h`. */
  help: string;
}

interface CommandConfig<O extends CommandOptions, P extends boolean, R> extends CommandText {
  /** Besides `--help`; none when left out. */
  options?: O;
  /** False when left out: an argument is then a usage error. */
  allowPositionals?: P;
  /**
   * The request the parsed line stands for; a `CliUsageError` it throws is answered as a
   * parse refusal is. Runs after `--help` has been answered, so it may insist on arguments.
   */
  read?: (parsed: ParsedLine<O, P>) => R;
}

/**
 * Refuses the arguments of a command that takes options only. Its own words: parseArgs's
 * refusal (`allowPositionals: false`) runs on about positional arguments.
 */
export function refuseArguments(extra: readonly string[]): void {
  if (extra.length > 0) throw new CliUsageError(`unexpected argument '${extra[0]}'`);
}

/**
 * Answers `error` when it is a usage error (exit 2, the line and the usage text); undefined
 * otherwise. For refusals found after parsing, such as a setting the option needs.
 */
export function usageRefusal(error: unknown, io: CliIo, usage: string): 2 | undefined {
  if (!(error instanceof CliUsageError || isParseArgsError(error))) return undefined;
  io.stderr(`error: ${usageErrorText(error)}\n${usage}\n`);
  return 2;
}

/** The request (the parsed line without `read`), or the exit code when it is already answered. */
export function parseCommand<
  // biome-ignore lint/complexity/noBannedTypes: a command without options of its own
  O extends CommandOptions = {},
  P extends boolean = false,
  R = ParsedLine<O, P>,
>(argv: string[], io: CliIo, command: CommandConfig<O, P, R>): R | number {
  try {
    const parsed: ParsedLine<O, P> = parseArgs({
      args: argv,
      options: { ...(command.options as O), ...HELP_OPTION },
      allowPositionals: (command.allowPositionals ?? false) as P,
    });
    if ((parsed.values as { help?: boolean }).help) {
      io.stdout(command.help);
      return 0;
    }
    return command.read === undefined ? (parsed as R) : command.read(parsed);
  } catch (error) {
    const code = usageRefusal(error, io, command.usage);
    if (code === undefined) throw error;
    return code;
  }
}

/**
 * The action a command with actions runs (`keys create …`) and the arguments left for it;
 * `help`, `--help` or `-h` in its place prints the help. No action or an unknown one is a
 * usage error (exit 2).
 */
export function parseAction<A extends string>(
  argv: string[],
  io: CliIo,
  command: CommandText & { actions: readonly A[] },
): { action: A; rest: string[] } | number {
  const [action, ...rest] = argv;
  if (action === "--help" || action === "-h" || action === "help") {
    io.stdout(command.help);
    return 0;
  }
  if (action === undefined || !(command.actions as readonly string[]).includes(action)) {
    const line = action === undefined ? "" : `error: unknown action '${action}'\n`;
    io.stderr(`${line}${command.usage}\n`);
    return 2;
  }
  return { action: action as A, rest };
}
