/**
 * The counting proxies (counting-proxies.ts) on a thread of their own: the harness starts
 * receiptd's CLI with spawnSync, which blocks its event loop, and a proxy on that loop would
 * stall the CLI's own connections to Redis and PostgreSQL.
 */
import { parentPort, workerData } from "node:worker_threads";
import { postgresCountingProxy, redisCountingProxy } from "./counting-proxies.js";

const { redisPort, postgresPort } = workerData as { redisPort: number; postgresPort: number };
const redis = await redisCountingProxy(redisPort);
const postgres = await postgresCountingProxy(postgresPort);
parentPort?.postMessage({ ready: true, redisPort: redis.port, postgresPort: postgres.port });
parentPort?.on("message", async (message: { id: number; close?: boolean }) => {
  if (message.close) {
    await Promise.all([redis.close(), postgres.close()]);
    parentPort?.postMessage({ id: message.id });
    parentPort?.close();
    return;
  }
  parentPort?.postMessage({ id: message.id, redis: redis.read(), postgres: postgres.read() });
});
