#!/usr/bin/env node
// The suite's distributed-mode tests need Redis and PostgreSQL. Use the running ones (the
// addresses in REDIS_URL / DATABASE_URL, else the local defaults); when one is down, start the
// local one the way the machine's own service scripts do. Tests isolate themselves (their own
// key prefix and schema), so starting nothing twice and touching nothing else is enough.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { createConnection } from "node:net";

function endpoint(urlText, fallbackPort) {
  const url = new URL(urlText);
  return { host: url.hostname || "127.0.0.1", port: Number(url.port || fallbackPort) };
}

function listening({ host, port }) {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(1000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
}

async function waitFor(target, what) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (await listening(target)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not come up on ${target.host}:${target.port}`);
}

function run(command, args) {
  const result = spawnSync(command, args, { stdio: "inherit" });
  if (result.error) throw result.error;
  return result.status === 0;
}

const redis = endpoint(process.env.REDIS_URL || "redis://127.0.0.1:6379", 6379);
if (!(await listening(redis))) {
  process.stderr.write(`ensure-services: Redis is down on port ${redis.port}; starting it\n`);
  run("redis-server", [
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "--port",
    String(redis.port),
    "--save",
    "",
    "--appendonly",
    "no",
  ]);
  await waitFor(redis, "Redis");
}

const postgres = endpoint(
  process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test",
  5432,
);
if (!(await listening(postgres))) {
  process.stderr.write(
    `ensure-services: PostgreSQL is down on port ${postgres.port}; starting it\n`,
  );
  const versions = readdirSync("/etc/postgresql");
  for (const version of versions) {
    run("pg_ctlcluster", ["--skip-systemctl-redirect", version, "main", "start"]);
  }
  await waitFor(postgres, "PostgreSQL");
}
