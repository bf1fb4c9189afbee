/**
 * Whose turn a request's CPU task takes in the fair pool (cpu-pool.ts, issue 32): the principal
 * it is counted against (API key, evaluation key, x402 payer), and for anonymous callers their
 * address: an IPv4 address, or the IPv6 /64 one subscriber is usually given, so rotating
 * through a /64 earns no extra turns. Unlike cap buckets the key never leaves the process (no
 * store, log or metric label holds it), so the address is not hashed.
 */
import type { FastifyRequest } from "fastify";
import { addressNetwork, CLIENT } from "../access/evaluation/client-address.js";
import { ANONYMOUS } from "../access/principal.js";

/** The fair-share key of `request`: its principal, or `anon:<address or /64>`. */
export function fairShareKey(request: FastifyRequest): string {
  if (request.principal !== ANONYMOUS) return request.principal;
  return `anon:${addressNetwork(request.ip, CLIENT) ?? "unknown"}`;
}
