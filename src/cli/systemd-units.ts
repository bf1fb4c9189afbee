/**
 * `receiptd systemd-units`: systemd units for the Procfile's processes (docs/operations.md,
 * "Processes under systemd"): one `receiptd-<name>.service` per Procfile line, its command run
 * by NODE in DIR with the environment of ENV_FILE, as USER, with DATA_DIR in systemd's state
 * directory. DIR defaults to the installation the command runs from (a checkout, or the npm
 * package, which ships its Procfile and docs/), so `WorkingDirectory`, `ExecStart`'s script and
 * `Documentation` name files that exist there.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type CliIo, processIo } from "./entry.js";
import { parseCommand, refuseArguments } from "./parse-command.js";

export const USAGE =
  "usage: receiptd systemd-units [--dir DIR] [--node PATH] [--user USER] [--env-file FILE] [--out DIR]";

export interface UnitOptions {
  /** The checkout or installed package: WorkingDirectory, and where Documentation points. */
  dir: string;
  node: string;
  user: string;
  envFile: string;
}

export const DEFAULTS: Omit<UnitOptions, "dir"> = {
  node: "/usr/bin/node",
  user: "receiptd",
  envFile: "/etc/receiptd/receiptd.env",
};

const RUNNING_FROM_SOURCE = import.meta.url.endsWith(".ts");

/**
 * The folder holding this installation's package.json and Procfile: the repository root when
 * running src/cli/*.ts, the root of the checkout or package when running dist/src/cli/*.js.
 */
export function installationRoot(): string {
  return resolve(
    fileURLToPath(new URL(RUNNING_FROM_SOURCE ? "../../" : "../../../", import.meta.url)),
  );
}

const HELP = `${USAGE}

Writes one systemd unit per Procfile line (receiptd-web.service, receiptd-worker.service):
  --dir DIR        the checkout or installed package the units run, on the machine they
                   are for (WorkingDirectory; its docs/operations.md is the units'
                   Documentation); default: this one, ${installationRoot()}
  --node PATH      the node binary (default ${DEFAULTS.node})
  --user USER      the account and group the processes run as (default ${DEFAULTS.user})
  --env-file FILE  the environment file, a copy of .env.example with the values set
                   (default ${DEFAULTS.envFile})
  --out DIR        write each unit to DIR/<unit> (e.g. /etc/systemd/system) and print its
                   path; without it the units are printed
Exit codes: 0 done, 2 a usage error.
`;

/** Seconds systemd waits after SIGTERM: the process's own drain limit, plus a margin. */
const STOP_SECONDS: Record<string, number> = {
  // REQUEST_TIMEOUT_MS (60 s) bounds an in-flight request.
  web: 75,
  // WORKER_SHUTDOWN_MS (25 s) bounds the active jobs.
  worker: 40,
};

/** `name: command` lines of a Procfile. */
export function procfileEntries(text: string): { name: string; command: string }[] {
  return text
    .split("\n")
    .filter((line) => /^[a-z][a-z0-9_-]*:/.test(line))
    .map((line) => {
      const at = line.indexOf(":");
      return { name: line.slice(0, at), command: line.slice(at + 1).trim() };
    });
}

/** The unit files, `{name: text}`, for the Procfile's entries. */
export function systemdUnits(procfile: string, options: UnitOptions): Record<string, string> {
  const units: Record<string, string> = {};
  for (const { name, command } of procfileEntries(procfile)) {
    if (!command.startsWith("node ")) throw new Error(`Procfile ${name}: expected 'node …'`);
    const exec = `${options.node} ${command.slice("node ".length)}`;
    units[`receiptd-${name}.service`] = `[Unit]
Description=receiptd ${name} (Procfile: ${name})
Documentation=file://${options.dir}/docs/operations.md
After=network-online.target
Wants=network-online.target

[Service]
Type=exec
User=${options.user}
Group=${options.user}
WorkingDirectory=${options.dir}
# DATA_DIR holds the identity files; EnvironmentFile may point it elsewhere (a shared volume).
StateDirectory=receiptd
StateDirectoryMode=0700
Environment=DATA_DIR=/var/lib/receiptd
EnvironmentFile=${options.envFile}
ExecStart=${exec}
# SIGTERM drains: in-flight work finishes, then the process exits 0.
KillSignal=SIGTERM
TimeoutStopSec=${STOP_SECONDS[name] ?? 60}
Restart=on-failure
RestartSec=2
# Exit 2 is a configuration or usage error: restarting would not fix it.
RestartPreventExitStatus=2
# Above MAX_CONNECTIONS (4096) plus what the process itself opens.
LimitNOFILE=65536
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=yes

[Install]
WantedBy=multi-user.target
`;
  }
  return units;
}

interface UnitsRequest {
  options: UnitOptions;
  out: string | undefined;
}

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const request = parseCommand(argv, io, {
    options: {
      dir: { type: "string" },
      node: { type: "string" },
      user: { type: "string" },
      "env-file": { type: "string" },
      out: { type: "string" },
    },
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: ({ values, positionals }): UnitsRequest => {
      refuseArguments(positionals);
      return {
        options: {
          // systemd takes absolute paths only (`resolve` also drops a trailing slash).
          dir: resolve(values.dir ?? installationRoot()),
          node: values.node ?? DEFAULTS.node,
          user: values.user ?? DEFAULTS.user,
          envFile: values["env-file"] ?? DEFAULTS.envFile,
        },
        out: values.out,
      };
    },
  });
  if (typeof request === "number") return request;
  // This installation's Procfile: DIR may be a folder on the machine the units are meant for.
  const procfile = readFileSync(join(installationRoot(), "Procfile"), "utf8");
  const units = systemdUnits(procfile, request.options);
  for (const [name, text] of Object.entries(units)) {
    if (request.out === undefined) {
      io.stdout(`# ${name}\n${text}\n`);
    } else {
      mkdirSync(request.out, { recursive: true });
      writeFileSync(join(request.out, name), text);
      io.stdout(`${join(request.out, name)}\n`);
    }
  }
  return 0;
}
