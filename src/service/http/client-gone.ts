/**
 * The signal that a request's client left: its connection closed before the answer was
 * written. CPU tasks take it (`CpuPool.run`), so work nobody will read is stopped (issue 22).
 */
import type { FastifyReply } from "fastify";

export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  // `close` comes once: after the answer was written, or when the connection went first.
  response.once("close", () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}
