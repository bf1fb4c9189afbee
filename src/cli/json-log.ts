/**
 * The JSON lines of processes that have no Fastify (`receiptd worker`), in the web process's
 * format: `{"level":"info","time":…,"pid":…,"hostname":…,…details,"msg":…}` on stdout, so one
 * log pipeline reads both (plugins/logging.ts sets the web's pino to level names too).
 */
import { hostname } from "node:os";
import type { LogLevel } from "../service/config.js";

export interface JsonLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

const ORDER: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal"];

export function jsonLog(level: LogLevel, write: (line: string) => void): JsonLog {
  const threshold = level === "silent" ? Number.POSITIVE_INFINITY : ORDER.indexOf(level);
  const host = hostname();
  const at = (name: LogLevel) => (details: object, msg: string) => {
    if (ORDER.indexOf(name) < threshold) return;
    const line = {
      level: name,
      time: Date.now(),
      pid: process.pid,
      hostname: host,
      ...details,
      msg,
    };
    write(`${JSON.stringify(line)}\n`);
  };
  return { info: at("info"), warn: at("warn"), error: at("error") };
}
