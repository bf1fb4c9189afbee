#!/usr/bin/env node
// systemd units for the Procfile's processes (docs/operations.md, "Processes under systemd"):
// one `receiptd-<name>.service` per Procfile line, its command run by NODE in DIR with the
// environment of ENV_FILE, as USER, with DATA_DIR in systemd's state directory.
//
//   node scripts/systemd-units.mjs [--dir /opt/receiptd] [--node /usr/bin/node]
//     [--user receiptd] [--env-file /etc/receiptd/receiptd.env] [--out DIR]
//
// Without --out the units are printed; with it, each is written to DIR/<unit>.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

export const DEFAULTS = {
  dir: "/opt/receiptd",
  node: "/usr/bin/node",
  user: "receiptd",
  envFile: "/etc/receiptd/receiptd.env",
};

/** Seconds systemd waits after SIGTERM: the process's own drain limit, plus a margin. */
const STOP_SECONDS = {
  // REQUEST_TIMEOUT_MS (60 s) bounds an in-flight request.
  web: 75,
  // WORKER_SHUTDOWN_MS (25 s) bounds the active jobs.
  worker: 40,
};

/** `name: command` lines of a Procfile. */
export function procfileEntries(text) {
  return text
    .split("\n")
    .filter((line) => /^[a-z][a-z0-9_-]*:/.test(line))
    .map((line) => {
      const at = line.indexOf(":");
      return { name: line.slice(0, at), command: line.slice(at + 1).trim() };
    });
}

/** The unit files, `{name: text}`, for the Procfile's entries. */
export function systemdUnits(procfile, options = DEFAULTS) {
  const units = {};
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

if (import.meta.filename === resolve(process.argv[1] ?? "")) {
  const { values } = parseArgs({
    options: {
      dir: { type: "string", default: DEFAULTS.dir },
      node: { type: "string", default: DEFAULTS.node },
      user: { type: "string", default: DEFAULTS.user },
      "env-file": { type: "string", default: DEFAULTS.envFile },
      out: { type: "string" },
    },
  });
  const procfile = readFileSync(join(import.meta.dirname, "..", "Procfile"), "utf8");
  const units = systemdUnits(procfile, { ...values, envFile: values["env-file"] });
  for (const [name, text] of Object.entries(units)) {
    if (values.out === undefined) {
      process.stdout.write(`# ${name}\n${text}\n`);
    } else {
      mkdirSync(values.out, { recursive: true });
      writeFileSync(join(values.out, name), text);
      console.log(join(values.out, name));
    }
  }
}
