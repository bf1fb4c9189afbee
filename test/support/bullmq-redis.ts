/**
 * The shared Redis of tests and CI (REDIS_URL, default 127.0.0.1:6379): each test run works
 * under its own key prefix and removes exactly those keys afterwards, never the others'.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const TEST_REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";

/** A BullMQ prefix no other test run uses. */
export function testPrefix(): string {
  return `receiptd-test-${randomBytes(6).toString("hex")}`;
}

/** Deletes every key under `prefix` (SCAN MATCH + UNLINK). */
export async function removePrefix(prefix: string): Promise<void> {
  const client = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      if (keys.length > 0) await client.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    client.disconnect();
  }
}
