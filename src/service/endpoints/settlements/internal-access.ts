/**
 * The `internal` access class (service.md §4): loopback callers that present the internal
 * token. Checked in that order, so a remote caller learns nothing about the token.
 *
 * The caller's address is the socket's peer, never `X-Forwarded-For`: a forwarded-for header
 * is whatever the client wrote.
 *
 * It lives beside `POST /payment-receipts`, the one internal route, and not in `plugins/`:
 * its hook is scoped to the route plugin that registers it (no `fastify-plugin`), while every
 * file in `plugins/` is an `fp` plugin that decorates the whole app.
 */
import { BlockList, isIP } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type Answer, errorAnswer, sendAnswer } from "../../errors.js";
import type { InternalToken } from "../../internal-token.js";

export const INTERNAL_TOKEN_HEADER = "x-internal-token";

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** 127.0.0.0/8, `::1` and IPv4-mapped `::ffff:127.x.x.x` (BlockList maps those itself). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const family = isIP(address);
  if (family === 0) return false;
  return LOOPBACK.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** Why `request` may not call an internal route, as the answer to send; null when it may. */
export function internalAccessRefusal(
  request: FastifyRequest,
  token: InternalToken,
): Answer | null {
  if (!isLoopbackAddress(request.raw.socket.remoteAddress)) return errorAnswer("loopback_only");
  if (!token.matches(request.headers[INTERNAL_TOKEN_HEADER])) {
    return errorAnswer("internal_token_required");
  }
  return null;
}

/**
 * Guards every route of `app`'s scope whose access class is `internal`, before the body is
 * read, like the other refusals at the door. Register it in the plugin that declares them.
 */
export function registerInternalAccess(app: FastifyInstance, token: InternalToken): void {
  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.access !== "internal") return;
    const refusal = internalAccessRefusal(request, token);
    if (refusal !== null) return sendAnswer(reply, refusal);
  });
}
