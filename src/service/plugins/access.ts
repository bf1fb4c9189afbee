/**
 * Who may call what, and how much (service.md §9). Every route declares its access class in
 * its route config, and registration fails for a route that does not, so no endpoint can be
 * added without deciding whether it is paid for.
 *
 * Credentials are checked in `onRequest`, before the body is read, so a refused request costs
 * no body buffering: an API key (`Authorization: Bearer` / `X-SVC-Key`), a pass token (on
 * `leased` routes), or an x402 payment. Each request is then charged to one daily bucket —
 * its key, its payer, or the shared anonymous one — and every response that passed carries
 * the bucket's `X-RateLimit-*` headers. The request holds its place in the bucket while it
 * runs, and gets it back in `onSend` when its answer is a refusal that reports no work done
 * (`isChargedAnswer`, work-charged.ts). Paid
 * responses are held in `onSend` until the facilitator has settled them (and the receipt job
 * is durable). `onResponse` writes the content-free audit line.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import {
  ANONYMOUS_ADDRESS_BUCKET_PREFIX,
  ANONYMOUS_NETWORK_BUCKET_PREFIX,
  anonymousShareBuckets,
  consumeAnonymous,
} from "../../access/anonymous-cap.js";
import {
  dailyCapOf,
  type KeyStore,
  misplacedKeyDetail,
  presentedKey,
} from "../../access/api-keys.js";
import type { AuditLog } from "../../access/audit.js";
import {
  type CapCharge,
  type CapDecision,
  type CapStore,
  capReachedResponse,
  consumeAll,
  consumeUnits,
  type RateLimitPolicy,
  rateLimitHeaders,
  type SharedCapDecision,
} from "../../access/caps.js";
import type { EvaluationKeys } from "../../access/evaluation/issuer.js";
import {
  ANONYMOUS,
  capBucketOf,
  evaluationPrincipal,
  keyPrincipal,
  type Principal,
  x402Principal,
} from "../../access/principal.js";
import { RefusalBuckets } from "../../access/refusal-buckets.js";
import {
  PassTokenError,
  type PassTokenErrorCode,
  passTokenFromHeaders,
  verifyPassToken,
} from "../../payments/pass-token.js";
import type { SettlementCall } from "../../payments/settlement-receipt.js";
import type { ServiceLimits } from "../config.js";
import { MAX_UNITS_PER_REQUEST } from "../cost.js";
import { sendAnswer } from "../errors.js";
import { guardAnswerStatus, headerCount } from "../http/connections.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";
import {
  isChargedAnswer,
  isChargedRefusal,
  isReplayedAnswer,
  isUnchargedResult,
  unitsCharged,
} from "../work-charged.js";
import { CORS_PREFLIGHT_ROUTE } from "./cors.js";
import { mayReplayPayment } from "./idempotency.js";
import {
  type AccessRefusal,
  accessRefusal,
  type PendingPayment,
  type Sale,
  X402Gate,
} from "./x402.js";

/** The audit status of a request whose client closed the connection before its answer. */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * - `keyed`: an API key or an x402 payment per call (verification, anchors, conformance);
 * - `leased`: an API key, or an x402 lease / day pass (ERC-8004 validation, crystal writes);
 * - `keyless`: anyone, counted against the anonymous cap (reads, metadata); a request that
 *   presents a key is counted against the key instead;
 * - `anonymous`: anyone, always counted against the anonymous cap, credentials unread
 *   (issuing evaluation keys: a key in hand does not buy more of them);
 * - `mixed`: the route decides per request with `keyedAccess` (MCP: discovery is keyless,
 *   `tools/call` is keyed);
 * - `internal`: loopback plus the internal token (settlement ingestion), checked by the route;
 * - `static`: the verification page's files (`GET /`, `/assets/…`): anyone, never counted
 *   against a cap and never charged, whatever credential comes with it (still audited).
 */
export type RouteAccess =
  | "keyed"
  | "leased"
  | "keyless"
  | "anonymous"
  | "mixed"
  | "internal"
  | "static";

/** How a request authenticated, once `onRequest` has run. */
export type Credential =
  | { kind: "none" }
  | { kind: "key" }
  | { kind: "pass" }
  | {
      kind: "payment";
      pending: PendingPayment;
      sale: Sale;
      used: boolean;
      /** What a `mixed` route did with it (MCP: the method and tool), for the receipt. */
      call: SettlementCall | null;
    };

declare module "fastify" {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /**
     * Who the request is counted against once access is checked: `key:<id>`, `eval:<id>`,
     * `x402:<payer>` or `anonymous`. Tenancy (crystals) and audit lines use it.
     */
    principal: Principal;
    /** `performance.now()` when access control first saw the request (aborts' audit latency). */
    receivedAt: number;
    /** Null until `onRequest` has run (Fastify forbids shared object defaults on requests). */
    credential: Credential | null;
    /**
     * The places this request holds in daily caps (its principal's, and for an anonymous call
     * its address's share first) until its answer is known, else null.
     */
    capCharge: {
      buckets: string[];
      /** The cap of each of `buckets`, for the headers after a charge of several units. */
      limits: number[];
      nowMs: number;
      /** What the rate-limit headers show, so a refund can correct them. */
      shown: CapDecision;
      policy: RateLimitPolicy;
    } | null;
    /**
     * A spent payment's refusal (`nonce_already_used`) left to the idempotency plugin, which
     * answers it unless the payer's earlier answer under the request's `Idempotency-Key` is
     * kept. Sent before the handler whatever happens (never served unpaid).
     */
    deferredRefusal: AccessRefusal | null;
  }
}

export interface AccessServices {
  keys: KeyStore;
  caps: CapStore;
  /** The issuer of self-served evaluation keys; null when `EVALUATION_KEYS=off`. */
  evaluation: EvaluationKeys | null;
  /** Null when payments are off (`X402_PAY_TO` unset): keyless keyed calls get 401. */
  payments: X402Gate | null;
  audit: AuditLog;
  limits: ServiceLimits;
  /**
   * HMAC key naming per-address counters (`ADDRESS_KEY_INFO`), so no store holds an address:
   * the anonymous cap's per-address shares.
   */
  addressKey: Uint8Array;
  /** did:keys whose pass tokens are honoured (the current service key's). */
  passIssuers: () => string[];
  clock: () => number;
}

/** The outcome of checking a request's credentials for keyed work. */
export type AccessDecision = { granted: true } | { granted: false; refusal: AccessRefusal };

const DOCS = "README.md#access-and-payments";

/**
 * Routes whose calls are not counted: the load balancer's health checks would otherwise
 * spend the anonymous bucket and take the service out of rotation at the cap; a browser's
 * CORS preflight is the browser asking, not the caller's call.
 */
const UNCOUNTED_ROUTES = new Set(["/health", "/health/live", CORS_PREFLIGHT_ROUTE]);

/**
 * Metadata, not resource reads (docs/access-decisions.md, "The anonymous cap"): what the
 * service is and its API document. Never counted and their credentials never read, like the
 * page's files; unlike health checks they stay inside the memory budget.
 */
const METADATA_ROUTES = new Set(["/info", "/openapi.json"]);

/** Whether calls to the route `url` (as registered) are left out of caps and the memory budget. */
export function isUncountedRoute(url: string): boolean {
  return UNCOUNTED_ROUTES.has(url);
}

/** Whether calls to the route `url` are left out of caps (but not the memory budget). */
export function isMetadataRoute(url: string): boolean {
  return METADATA_ROUTES.has(url);
}

/** The rate-limit policy id of a cap-store bucket: its kind, never its key or address. */
function policyOf(bucket: string): RateLimitPolicy {
  if (bucket.startsWith(ANONYMOUS_ADDRESS_BUCKET_PREFIX)) return "anonymous-address";
  if (bucket.startsWith(ANONYMOUS_NETWORK_BUCKET_PREFIX)) return "anonymous-network";
  return capBucketOf(bucket as Principal);
}

/**
 * No key where keys are read. When `request` brought one elsewhere (an `Authorization` header
 * without `Bearer`, a query parameter), `detail` says what was found and how to send it; the
 * plain answer, for a request with nothing of the kind, stays service.md §9's
 * `{"error","hint","docs"}`.
 */
function missingKey(request?: FastifyRequest): AccessRefusal {
  const detail =
    request === undefined ? null : misplacedKeyDetail(request.headers.authorization, request.url);
  return accessRefusal(
    "missing_key",
    {
      ...(detail === null ? {} : { detail }),
      hint: "send an API key as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'",
      docs: DOCS,
    },
    { "www-authenticate": 'Bearer realm="receiptd"' },
  );
}

function invalidKey(): AccessRefusal {
  return accessRefusal(
    "invalid_key",
    {
      hint: "the key is unknown or revoked; ask the operator for a valid key",
      docs: DOCS,
    },
    { "www-authenticate": 'Bearer realm="receiptd", error="invalid_token"' },
  );
}

/** A self-served evaluation key past its lifetime: refused like a bad key, with its own code. */
function keyExpired(expiresAt: string | null): AccessRefusal {
  return accessRefusal(
    "key_expired",
    {
      hint: `the key expired at ${expiresAt}; evaluation keys are short-lived: get a new one (POST /keys/evaluation) or ask the operator for a key`,
      docs: DOCS,
    },
    { "www-authenticate": 'Bearer realm="receiptd", error="invalid_token"' },
  );
}

/**
 * Node keeps only the first of several `Authorization` headers, so a second credential would
 * otherwise pass unseen and the call be charged to the first one.
 */
function conflictingCredentials(): AccessRefusal {
  return accessRefusal("conflicting_credentials", {
    detail: "the Authorization header is repeated; send one credential",
    docs: DOCS,
  });
}

function saleOf(access: RouteAccess): Sale {
  return access === "leased" ? "pass" : "call";
}

function send(reply: FastifyReply, refusal: AccessRefusal): FastifyReply {
  return sendAnswer(reply.headers(refusal.headers), refusal);
}

/**
 * Whether `request` may do keyed work: routes of the `mixed` class ask before doing it (MCP's
 * `tools/call`). Side-effect free; a route that then does keyed work says so with
 * `markKeyedWorkDone`, and only then is a presented payment settled, its receipt naming the
 * `call` the route reports.
 */
export function keyedAccess(request: FastifyRequest): AccessDecision {
  const kind = request.credential?.kind;
  if (kind === "key" || kind === "pass" || kind === "payment") return { granted: true };
  const route = request.routeOptions.url ?? "/";
  const gate = request.server.accessServices.payments;
  return {
    granted: false,
    refusal: gate === null ? missingKey(request) : gate.challenge(route, "call"),
  };
}

export function markKeyedWorkDone(request: FastifyRequest, call: SettlementCall): void {
  const credential = request.credential;
  if (credential?.kind !== "payment") return;
  credential.used = true;
  credential.call = call;
}

declare module "fastify" {
  interface FastifyInstance {
    accessServices: AccessServices;
  }
}

export function registerAccessControl(app: FastifyInstance, services: AccessServices): void {
  // Keyless refusals per address, in this process (access/refusal-buckets.ts, issue 34).
  const refusals = new RefusalBuckets();
  const keylessAddress = new WeakMap<FastifyRequest, string>();
  app.decorateRequest("principal", ANONYMOUS);
  app.decorateRequest("credential", null);
  app.decorateRequest("capCharge", null);
  app.decorateRequest("deferredRefusal", null);
  app.addHook("onRoute", (route) => {
    // Fastify adds HEAD twins of GET routes; they share the GET route's config.
    if (route.method === "HEAD") return;
    if (route.config?.access === undefined) {
      throw new Error(`route ${String(route.method)} ${route.url} declares no access class`);
    }
  });

  /**
   * Charges `bucket`; answers 429 when it is spent, else adds the headers to the reply. The
   * charge is provisional until `onSend` knows whether the answer is a result.
   */
  function charge(request: FastifyRequest, reply: FastifyReply, bucket: Principal, limit: number) {
    return chargeAll(request, reply, bucket, [{ bucket, limit }]);
  }

  /**
   * An anonymous call: its address's and its network's shares, then the anonymous cap behind
   * every share, whose reserve only an address's first calls may take (anonymous-cap.ts).
   */
  async function chargeAnonymous(request: FastifyRequest, reply: FastifyReply) {
    const { limits, addressKey } = services;
    // Past its keyless refusals, an address is refused before any cap is asked: no Redis.
    const address = anonymousShareBuckets(request.ip, addressKey).address;
    const waitSeconds = refusals.waitSeconds(address, services.clock());
    if (waitSeconds > 0) {
      request.server.metrics.capRefusals.inc({ bucket: "refusals" });
      return accessRefusal(
        "too_many_refusals",
        { detail: "this address was refused too often; wait before asking again" },
        { "retry-after": String(waitSeconds) },
      );
    }
    keylessAddress.set(request, address);
    const anonymousLimits = {
      dailyCap: limits.anonymousDailyCap,
      perAddressDailyCap: limits.anonymousAddressDailyCap,
      perNetworkDailyCap: limits.anonymousNetworkDailyCap,
      newClientReservePercent: limits.anonymousNewClientReservePercent,
    };
    const nowMs = services.clock();
    const counted = await consumeAnonymous(
      services.caps,
      request.ip,
      addressKey,
      anonymousLimits,
      nowMs,
    );
    return holdCharge(request, reply, ANONYMOUS, counted, nowMs);
  }

  /** Counts the request against every bucket of `charges` or none; `principal` names the metric. */
  async function chargeAll(
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    charges: CapCharge[],
  ) {
    const nowMs = services.clock();
    const counted = await consumeAll(services.caps, charges, nowMs);
    return holdCharge(request, reply, principal, { ...counted, charges }, nowMs);
  }

  /** Refuses a request some bucket refused; else holds its places until `onSend`. */
  function holdCharge(
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    counted: SharedCapDecision & { charges: CapCharge[] },
    nowMs: number,
  ) {
    const { decision, refusedBy, shownBy, charges } = counted;
    const policy = policyOf(charges[shownBy]?.bucket ?? principal);
    if (refusedBy !== null) {
      request.server.metrics.capRefusals.inc({ bucket: capBucketOf(principal) });
      const { body, headers } = capReachedResponse(decision, policy);
      return accessRefusal(body.error, { hint: body.hint }, headers);
    }
    request.capCharge = {
      buckets: charges.map((each) => each.bucket),
      limits: charges.map((each) => each.limit),
      nowMs,
      shown: decision,
      policy,
    };
    reply.headers(rateLimitHeaders(decision, policy));
    return null;
  }

  /**
   * Keeps the charge of a result, adding the units beyond the held one that its cost came to
   * (`chargeUnits`); gives a refusal's back. The headers say what was counted.
   */
  async function settleCharge(request: FastifyRequest, reply: FastifyReply) {
    const held = request.capCharge;
    if (held === null) return;
    request.capCharge = null;
    if (isChargedAnswer(reply)) {
      const extra = unitsCharged(reply) - 1;
      if (extra > 0) await chargeExtraUnits(reply, held, extra);
      return;
    }
    let refunded = true;
    for (const bucket of held.buckets) {
      try {
        await services.caps.refund(bucket, held.nowMs);
      } catch {
        // The request stays counted there: a cap store that fails errs on the side of the cap.
        refunded = false;
      }
    }
    if (!refunded) return;
    const { shown, policy } = held;
    const remaining = Math.min(shown.limit, shown.remaining + 1);
    reply.headers(rateLimitHeaders({ ...shown, remaining }, policy));
  }

  /**
   * Counts `extra` units against every bucket the request held one in; the headers show the
   * bucket with the fewest left. A store that fails leaves the units uncounted (the request is
   * answered: its work is done) and the headers as they were.
   */
  async function chargeExtraUnits(
    reply: FastifyReply,
    held: NonNullable<FastifyRequest["capCharge"]>,
    extra: number,
  ) {
    let remaining = Number.POSITIVE_INFINITY;
    for (const [index, bucket] of held.buckets.entries()) {
      const limit = held.limits[index] ?? held.shown.limit;
      try {
        const count = await consumeUnits(services.caps, bucket, extra, held.nowMs);
        remaining = Math.min(remaining, Math.max(0, limit - count));
      } catch (error) {
        reply.log.warn({ err: error }, "cap store unavailable; extra units not counted");
        return;
      }
    }
    if (Number.isFinite(remaining)) {
      reply.headers(rateLimitHeaders({ ...held.shown, remaining }, held.policy));
    }
  }

  app.addHook("onRequest", async (request, reply) => {
    request.credential = { kind: "none" };
    const access = request.routeOptions.config.access;
    const route = request.routeOptions.url;
    // Unmatched URLs (404), internal routes and the page's static files are not the public's
    // calls to count.
    if (access === undefined || route === undefined || access === "internal") return;
    if (access === "static") return;
    if (UNCOUNTED_ROUTES.has(route) || METADATA_ROUTES.has(route)) return;
    const { limits } = services;
    if (access === "anonymous") {
      const refusal = await chargeAnonymous(request, reply);
      if (refusal !== null) return send(reply, refusal);
      return;
    }
    if (headerCount(request.raw, "authorization") > 1) {
      return send(reply, conflictingCredentials());
    }

    let pass: string | null;
    try {
      pass = access === "leased" ? passTokenFromHeaders(request.headers) : null;
    } catch (error) {
      if (!(error instanceof PassTokenError)) throw error;
      return send(reply, passRefusal(services, route, error.code));
    }
    // A Bearer pass token is not an API key.
    const bearerIsPass =
      pass !== null && /^bearer\s+pass_/i.test(request.headers.authorization ?? "");
    const key = presentedKey(
      bearerIsPass ? { "x-svc-key": request.headers["x-svc-key"] } : request.headers,
    );

    if (key !== null) {
      const authentication = await services.keys.authenticate(key);
      if (!authentication.ok) {
        return send(
          reply,
          authentication.error === "key_expired"
            ? keyExpired(authentication.key.expiresAt)
            : invalidKey(),
        );
      }
      const { id, kind } = authentication.key;
      request.principal = kind === "evaluation" ? evaluationPrincipal(id) : keyPrincipal(id);
      request.credential = { kind: "key" };
      const cap = dailyCapOf(authentication.key, limits.keyDailyCap);
      const refusal = await charge(request, reply, request.principal, cap);
      if (refusal !== null) return send(reply, refusal);
      return;
    }

    if (pass !== null) {
      let payer: string;
      try {
        payer = verifyPassToken(pass, {
          issuers: services.passIssuers(),
          scope: route,
          now: services.clock,
        }).payer;
      } catch (error) {
        if (!(error instanceof PassTokenError)) throw error;
        return send(reply, passRefusal(services, route, error.code));
      }
      request.principal = x402Principal(payer);
      request.credential = { kind: "pass" };
      const refusal = await charge(request, reply, request.principal, limits.x402PayerDailyCap);
      if (refusal !== null) return send(reply, refusal);
      return;
    }

    const gate = services.payments;
    if (gate !== null && access !== "keyless" && X402Gate.presentsPayment(request)) {
      const sale = saleOf(access);
      const check = await gate.check(request, route, sale, async (payer) => {
        request.principal = x402Principal(payer);
        return charge(request, reply, request.principal, limits.x402PayerDailyCap);
      });
      if (!check.ok) {
        if (check.spentBy !== undefined && mayReplayPayment(request)) {
          request.principal = x402Principal(check.spentBy);
          request.deferredRefusal = check.refusal;
          return;
        }
        return send(reply, check.refusal);
      }
      request.credential = {
        kind: "payment",
        pending: check.pending,
        sale,
        used: access !== "mixed",
        call: null,
      };
      return;
    }

    if (access === "keyed" || access === "leased") {
      return send(
        reply,
        gate === null ? missingKey(request) : gate.challenge(route, saleOf(access)),
      );
    }
    // keyless, and mixed before the route knows whether keyed work is asked for.
    const refusal = await chargeAnonymous(request, reply);
    if (refusal !== null) return send(reply, refusal);
  });

  /** Settles a held paid response; the payload to send (a refusal if settlement failed). */
  async function settlePayment(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const credential = request.credential;
    const gate = services.payments;
    if (credential === null || credential.kind !== "payment" || gate === null) return payload;
    // Settle once: a refusal sent below passes through onSend again.
    request.credential = { kind: "none" };
    // A refusal is settled only when it reports work done (a 2xx always is); an answer given
    // again for an Idempotency-Key never is (its first delivery was paid).
    if (
      !credential.used ||
      isReplayedAnswer(reply) ||
      (reply.statusCode >= 400 && !isChargedAnswer(reply))
    ) {
      await gate.abandon(credential.pending);
      return payload;
    }
    const { pending, sale, call } = credential;
    const refusal = await gate.settle(request, reply, pending, sale, call);
    if (refusal === null) return payload;
    reply.code(refusal.statusCode).headers(refusal.headers).type("application/json; charset=utf-8");
    return refusal.json;
  }

  // The idempotency plugin answers a deferred refusal in preValidation; were it not
  // registered, or a route not to take keys, the refusal still goes out before the handler.
  app.addHook("preHandler", async (request, reply) => {
    const deferred = request.deferredRefusal;
    if (deferred === null) return;
    request.deferredRefusal = null;
    return send(reply, deferred);
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const sent = await settlePayment(request, reply, payload);
    // After settlement, whose failure turns a result into a refusal.
    await settleCharge(request, reply);
    const address = keylessAddress.get(request);
    if (address !== undefined && reply.statusCode >= 400 && !isChargedAnswer(reply)) {
      refusals.take(address, services.clock());
    }
    return sent;
  });

  // A request whose connection closed before its answer (the guard's 408, a client gone) is
  // audited too, under its principal, with the guard's status or 499 (client closed request).
  app.addHook("onRequestAbort", async (request) => {
    services.audit.record({
      principal: request.principal,
      method: request.method,
      route: request.routeOptions.url ?? "(unmatched)",
      status: guardAnswerStatus(request.raw.socket) ?? CLIENT_CLOSED_REQUEST,
      bytes: 0,
      latencyMs: performance.now() - request.receivedAt,
    });
  });

  // Callback-style: the audit line is queued, not awaited, so no promise per request (issue 33).
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url;
    services.audit.record({
      principal: request.principal,
      method: request.method,
      route: route ?? "(unmatched)",
      status: reply.statusCode,
      bytes: Number(reply.getHeader("content-length") ?? 0),
      latencyMs: reply.elapsedTime,
      chargedRefusal: isChargedRefusal(reply),
      unchargedResult: isUnchargedResult(reply),
      replayed: isReplayedAnswer(reply),
    });
    done();
  });
}

/**
 * The cap units `request` may be charged by its cost (docs/cost-bounds.md): the one it holds
 * plus what its cap has left, at most `MAX_UNITS_PER_REQUEST`. A request that holds no cap
 * place is authorised one unit.
 */
export function authorisedUnits(request: FastifyRequest): number {
  const held = request.capCharge;
  if (held === null) return 1;
  return Math.min(MAX_UNITS_PER_REQUEST, held.shown.remaining + 1);
}

/** A pass that cannot be honoured: offer a new one (or, with payments off, ask for a key). */
function passRefusal(
  services: AccessServices,
  route: string,
  code: PassTokenErrorCode,
): AccessRefusal {
  return services.payments === null
    ? missingKey()
    : services.payments.challenge(route, "pass", code);
}

/**
 * Access control over the services `receiptd-access-services` opened. Its `onRequest` hook
 * runs after the connection hooks' (a request without a usable Host is refused before any
 * cap is charged) and after the CORS preflight's (a preflight carries no credentials); it
 * counts refusals in `request.server.metrics`.
 */
export const accessControl = fastifyPlugin(
  async (app: FastifyInstance) => registerAccessControl(app, app.accessServices),
  {
    name: PLATFORM.access,
    fastify: FASTIFY_VERSION,
    dependencies: [
      PLATFORM.metrics,
      PLATFORM.accessServices,
      PLATFORM.connectionHooks,
      PLATFORM.cors,
    ],
    decorators: { fastify: ["metrics", "accessServices"] },
  },
);
