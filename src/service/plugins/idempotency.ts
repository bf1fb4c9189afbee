/**
 * `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header-07) on keyed and paid writes
 * (issue 28; docs/access-decisions.md "Idempotency-Key"). A route opts in with one line of
 * config, `idempotent: true` (any credential) or `"paid"` (x402 payments only: `/verify`,
 * where a key's retry costs a cap unit and nothing else).
 *
 * Writes are already idempotent by content (anchors by digest, crystals by id, settlements
 * by transaction); what a key adds is the charge: a retry with the same key, principal,
 * method, URL and body gets the first answer again (`Idempotent-Replayed: true`) and is not
 * charged again, to a cap, a bill or a payer. So only charged answers (`isChargedAnswer`)
 * are kept; any other answer drops the claim and a retry runs afresh.
 *
 * The check runs in `preValidation`, once access control has named the principal and the
 * body is read. A paid retry that re-sends its spent authorization is refused by the x402
 * gate as `nonce_already_used`; access control defers that refusal to this hook
 * (`request.deferredRefusal`), which answers it only when no answer of that payer is kept.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import {
  type IdempotencyStore,
  idempotencyEntry,
  idempotencyOwner,
  MAX_STORED_ANSWER_BYTES,
  requestFingerprint,
  type StoredAnswer,
} from "../../access/idempotency-store.js";
import { PAYMENT_HEADERS } from "../../payments/codec.js";
import { PASS_TOKEN_HEADER } from "../../payments/pass-token.js";
import { sendAnswer } from "../errors.js";
import { headerCount } from "../http/connections.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import { isChargedAnswer, markReplayed } from "../work-charged.js";
import { type AccessRefusal, accessRefusal } from "./x402.js";

/** Which requests of a route take an `Idempotency-Key`. */
export type IdempotentRoute = true | "paid";

declare module "fastify" {
  interface FastifyContextConfig {
    idempotent?: IdempotentRoute;
  }
  interface FastifyRequest {
    /** The claim this request holds on its key, until its answer is kept or dropped. */
    idempotencyClaim: { entry: string; claim: string; fingerprint: string; owner: string } | null;
  }
}

export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** Marks an answer given again to a retry. */
export const IDEMPOTENT_REPLAYED_HEADER = "idempotent-replayed";

/**
 * 1–255 visible ASCII characters. draft-07 makes the key an sf-string; a quoted key is taken
 * whole, quotes included, so `"abc"` and `abc` are two keys and neither is refused.
 */
const KEY_FORM = /^[\x21-\x7e]{1,255}$/;

/** The headers of an answer that a replay repeats; the rate-limit ones are the retry's own. */
const KEPT_HEADERS = [
  "content-type",
  "etag",
  "location",
  "last-modified",
  PAYMENT_HEADERS.response,
  PAYMENT_HEADERS.xPaymentResponse,
  PASS_TOKEN_HEADER,
] as const;

function routeTakesKey(request: FastifyRequest): IdempotentRoute | undefined {
  return request.routeOptions.config.idempotent;
}

/**
 * The request's key when its route takes one and it is well formed; null when it sends none
 * (or the route takes none); `"invalid"` for a malformed or repeated one.
 */
export function idempotencyKeyOf(request: FastifyRequest): string | null | "invalid" {
  if (routeTakesKey(request) === undefined) return null;
  const value = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (value === undefined) return null;
  if (typeof value !== "string" || headerCount(request.raw, IDEMPOTENCY_KEY_HEADER) > 1) {
    return "invalid";
  }
  return KEY_FORM.test(value) ? value : "invalid";
}

/** Whether access control may leave a spent payment's refusal to this plugin. */
export function mayReplayPayment(request: FastifyRequest): boolean {
  const key = idempotencyKeyOf(request);
  return key !== null && key !== "invalid";
}

function refuse(reply: FastifyReply, refusal: AccessRefusal): FastifyReply {
  return sendAnswer(reply.headers(refusal.headers), refusal);
}

function invalidKey() {
  return accessRefusal("invalid_idempotency_key", {
    detail: "Idempotency-Key is 1–255 visible ASCII characters, sent once",
  });
}

function bodyBytes(payload: unknown): Buffer | null {
  if (typeof payload === "string") return Buffer.from(payload);
  if (Buffer.isBuffer(payload)) return payload;
  if (payload === null || payload === undefined) return Buffer.alloc(0);
  // A stream cannot be kept without buffering it here.
  return null;
}

function keptAnswer(reply: FastifyReply, payload: unknown): StoredAnswer | null {
  const body = bodyBytes(payload);
  if (body === null || body.length > MAX_STORED_ANSWER_BYTES) return null;
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = reply.getHeader(name);
    if (typeof value === "string" || typeof value === "number") headers[name] = String(value);
  }
  return { status: reply.statusCode, headers, body };
}

export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  app.decorateRequest("idempotencyClaim", null);
  app.addHook("onRoute", (route) => {
    if (route.config?.idempotent !== undefined && route.method !== "POST") {
      throw new Error(`${String(route.method)} ${route.url}: only writes take an Idempotency-Key`);
    }
  });

  app.addHook("preValidation", async (request, reply) => {
    const mode = routeTakesKey(request);
    if (mode === undefined) return;
    const deferred = request.deferredRefusal;
    request.deferredRefusal = null;
    const key = idempotencyKeyOf(request);
    const paid = request.credential?.kind === "payment" || deferred !== null;
    if (key === null || (mode === "paid" && !paid)) {
      if (deferred !== null) return refuse(reply, deferred);
      return;
    }
    if (key === "invalid") return refuse(reply, invalidKey());
    reply.header(IDEMPOTENCY_KEY_HEADER, key);

    const entry = idempotencyEntry(request.principal, key);
    const fingerprint = requestFingerprint(
      request.method,
      request.url,
      Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
    );
    const owner = idempotencyOwner(request.principal);
    let begun: Awaited<ReturnType<IdempotencyStore["begin"]>>;
    try {
      begun = await store.begin(entry, fingerprint, owner);
    } catch {
      // A retry cannot be told from a first request: running it could charge it twice.
      return refuse(
        reply,
        accessRefusal("idempotency_store_unavailable", {}, { "retry-after": "1" }),
      );
    }
    if (begun.state === "claimed") {
      if (deferred === null) {
        request.idempotencyClaim = { entry, claim: begun.claim, fingerprint, owner };
        return;
      }
      // The authorization was spent, but not on an answer kept under this key.
      await store.release(entry, begun.claim, owner).catch(() => {});
      return refuse(reply, deferred);
    }
    if (begun.fingerprint !== fingerprint) {
      return refuse(
        reply,
        accessRefusal("idempotency_key_reused", {
          detail: "this Idempotency-Key was used with another request (method, URL or body)",
        }),
      );
    }
    if (begun.state === "in_flight") {
      return refuse(
        reply,
        accessRefusal(
          "idempotency_key_in_flight",
          { detail: "a request with this Idempotency-Key is still being answered" },
          { "retry-after": "1" },
        ),
      );
    }
    const { answer } = begun;
    markReplayed(reply);
    reply.code(answer.status).headers(answer.headers).header(IDEMPOTENT_REPLAYED_HEADER, "true");
    return reply.send(answer.body);
  });

  /** Keeps a charged answer under the claim, or drops the claim. Runs after settlement. */
  app.addHook("onSend", async (request, reply, payload) => {
    const held = request.idempotencyClaim;
    if (held === null) return payload;
    request.idempotencyClaim = null;
    const answer = isChargedAnswer(reply) ? keptAnswer(reply, payload) : null;
    try {
      if (answer === null) await store.release(held.entry, held.claim, held.owner);
      else await store.complete(held.entry, held.claim, held.fingerprint, answer, held.owner);
    } catch {
      // The answer goes out all the same; the claim expires (IDEMPOTENCY_CLAIM_MS).
    }
    return payload;
  });

  // A request that answered without passing onSend keeps no claim. One whose client went
  // away mid-request keeps it: its work may still finish and be charged, so its retries
  // wait (409) until the claim expires rather than run and be charged again.
  app.addHook("onResponse", async (request) => {
    const held = request.idempotencyClaim;
    if (held === null) return;
    request.idempotencyClaim = null;
    await store.release(held.entry, held.claim, held.owner).catch(() => {});
  });
}

/**
 * The platform plugin: after access control, whose principal scopes the keys and whose
 * `onSend` (settlement) must run before this one stores an answer.
 */
export const idempotency = fastifyPlugin(
  async (app: FastifyInstance) => registerIdempotency(app, app.backends.idempotency),
  {
    name: PLATFORM.idempotency,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.backends, PLATFORM.access],
    decorators: { fastify: ["backends"] },
  },
);
