/** Shared plumbing for the command-line entry points. */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** True when `moduleUrl` is the script node was started with (npm bins are symlinks). */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/** Runs `main` and exits with its code once stdout has drained. */
export function runMain(main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 2;
    },
  );
}

/** Where a CLI writes; tests pass a collector instead of the process streams. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** parseArgs refuses unknown or incomplete options with a TypeError coded `ERR_PARSE_ARGS_*`. */
export function isParseArgsError(error: unknown): error is TypeError & { code: string } {
  return (
    error instanceof TypeError &&
    "code" in error &&
    typeof error.code === "string" &&
    error.code.startsWith("ERR_PARSE_ARGS_")
  );
}

/**
 * The one line a CLI prints for a usage error. Node's text for an unknown option runs on
 * with advice about `--` that ends in an unbalanced quote, so that one is reworded.
 */
export function usageErrorText(error: Error): string {
  if (isParseArgsError(error) && error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    // With positionals allowed, node appends advice about `--`; without, it does not.
    const option = (/^Unknown option '(.*?)'\. To specify/s.exec(error.message) ??
      /^Unknown option '(.*)'$/s.exec(error.message))?.[1];
    if (option !== undefined) return `unknown option '${option}'`;
  }
  return error.message.split("\n")[0] ?? "";
}
