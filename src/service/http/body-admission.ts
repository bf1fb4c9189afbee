/**
 * What a request may make the process hold, decided before its body is read (issue 22):
 *
 * - A memory budget across the process: every admitted request holds its body's declared
 *   length (the route's limit when the length is not declared) and, once built, its answer,
 *   until its response closes. A request that does not fit is refused `503
 *   memory_budget_exceeded` before its body is read; `/health` is always answered. Holding
 *   the declared length, not the bytes received so far, is what bounds the memory: a client
 *   admitted on a promise of 1 byte could otherwise send 1 MiB once admitted.
 * - Within it, a share per principal (issue 32, finding 2): one key's slow bodies held the
 *   whole budget, so every other key got 503 for as long as it kept them open. A principal
 *   (its `fairShareKey`: key, evaluation key, payer, or anonymous address) may hold at most
 *   `MEMORY_SHARE_PERCENT` of the budget; past it only that principal is refused, and the
 *   budget stays the backstop across all of them. Nothing is reserved from the principal's
 *   daily cap for what it holds, so holding cannot be turned into a lever on its cap.
 * - A request's body limit: the route's, or `maxAnonymousBodyBytes` for a request without a
 *   key, pass or payment (MCP discovery, evaluation-key issuance). A declared length over it
 *   is a `413 body_too_large` before `100 Continue`, so the client never uploads it; a body
 *   without a declared length is cut off at the limit while it streams.
 * - Routes that take large bodies from one principal (`POST /crystals`) hold at most
 *   `maxCrystalUploadsPerKey` of them per principal at once: more are `429 too_many_uploads`.
 *   The slots are the mode's (`UploadSlots`, src/access/upload-slots.ts): across the deployment when
 *   distributed, so that N webs do not allow N times the limit.
 *
 * Registered after access control: `preParsing` runs once every `onRequest` hook (the
 * credential check) has passed, and not at all once one has answered.
 */
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import { errorCodes, type FastifyInstance, type FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import type { UploadSlot, UploadSlots } from "../../access/upload-slots.js";
import type { ServiceLimits } from "../config.js";
import { type Answer, errorAnswer, ServiceError, sendAnswer } from "../errors.js";
import { fairShareKey } from "../fair-share.js";
import { FASTIFY_VERSION, PLATFORM } from "../platform-names.js";

/** Node's own test for an `Expect` that asks for `100 Continue`. */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's bodies count against `maxCrystalUploadsPerKey` per principal. */
    uploadsPerKey?: boolean;
  }
  interface FastifyRequest {
    /** What this request holds of the memory budget, once admitted; null before. */
    memoryHold: MemoryHold | null;
    /** The body this request may send, once admitted; null: the route's limit. */
    admittedBodyBytes: number | null;
  }
  interface FastifyInstance {
    /** Bytes of bodies and answers held across the process (issue 22). */
    memoryBudget: MemoryBudget;
  }
}

/** One request's part of the budget: held until its response closes. */
interface MemoryHold {
  /** Whose share it is held in. */
  share: string;
  bytes: number;
  /** False once the response closed: an answer built after that is never written. */
  open: boolean;
}

/** Why a hold was refused: the whole budget is spent, or the principal's share of it. */
export type MemoryRefusal = "budget" | "share";

/**
 * The budget's last 1/RESERVE_PARTS is a reserve, and a principal may hold at most
 * 1/RESERVE_PARTS of the reserve once it is reached: a small request from a caller holding
 * little still fits when a few principals have taken their shares.
 */
const RESERVE_PARTS = 8;

/** Bytes held across the process against one limit, and by each principal against its share. */
export class MemoryBudget {
  readonly limit: number;
  /** What one principal may hold (the whole limit when there is no share). */
  readonly shareLimit: number;
  /** Bytes held across the process before the reserve starts. */
  readonly openLimit: number;
  /** What one principal may hold in all once the reserve is being used. */
  readonly newcomerLimit: number;
  #used = 0;
  /** Bytes held per principal; a principal holding nothing is forgotten. */
  readonly #shares = new Map<string, number>();

  constructor(limit: number, sharePercent = 100) {
    this.limit = limit;
    this.shareLimit = Math.max(1, Math.floor((limit * sharePercent) / 100));
    // No reserve without shares: a single principal may then hold the whole budget.
    const reserve = sharePercent >= 100 ? 0 : Math.floor(limit / RESERVE_PARTS);
    this.openLimit = limit - reserve;
    this.newcomerLimit = Math.floor(reserve / RESERVE_PARTS);
  }

  get used(): number {
    return this.#used;
  }

  /** Bytes `share` holds now. */
  heldBy(share: string): number {
    return this.#shares.get(share) ?? 0;
  }

  /**
   * Holds `bytes` for `share` if they fit both the share and the budget; null once held, else
   * which refused (the share first: a principal past it is told so even when the budget is
   * spent too). Once the reserve is reached, only a principal holding a newcomer's amount
   * or less is admitted.
   */
  tryHold(share: string, bytes: number): MemoryRefusal | null {
    const held = this.heldBy(share);
    if (held >= this.shareLimit || held + bytes > this.shareLimit) return "share";
    if (this.#used >= this.limit || this.#used + bytes > this.limit) return "budget";
    // Past the open part, each principal may hold only a newcomer's amount: several keys of
    // one attacker at their shares would otherwise fill the budget and refuse every other
    // caller; now they need many more keys (evaluation keys are issued per network and day).
    if (this.#used + bytes > this.openLimit && held + bytes > this.newcomerLimit) return "budget";
    this.hold(share, bytes);
    return null;
  }

  /** Holds bytes that already exist (a built answer), whether or not they fit. */
  hold(share: string, bytes: number): void {
    this.#used += bytes;
    this.#shares.set(share, this.heldBy(share) + bytes);
  }

  release(share: string, bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
    const left = this.heldBy(share) - bytes;
    if (left > 0) this.#shares.set(share, left);
    else this.#shares.delete(share);
  }
}

/** What runs when a socket closes: one listener per socket, however many requests it carries. */
const socketCloseActions = new WeakMap<Socket, Set<() => void>>();

/** Runs `action` when `socket` closes; returns the function that cancels it. */
function onSocketClose(socket: Socket | undefined, action: () => void): () => void {
  if (socket === undefined || typeof socket.once !== "function") return () => {};
  let actions = socketCloseActions.get(socket);
  if (actions === undefined) {
    const set = new Set<() => void>();
    actions = set;
    socketCloseActions.set(socket, set);
    socket.once("close", () => {
      for (const run of set) run();
      set.clear();
    });
  }
  const registered = actions;
  registered.add(action);
  return () => registered.delete(action);
}

function isHealthCheck(request: FastifyRequest): boolean {
  return request.routeOptions.url === "/health";
}

/** The body `request` may send: the route's limit, lower for a request without credentials. */
function bodyLimitOf(request: FastifyRequest, limits: ServiceLimits): number {
  const routeLimit = request.routeOptions.bodyLimit ?? limits.maxBodyBytes;
  const access = request.routeOptions.config.access;
  // Internal routes check the loopback address and the token before the body instead.
  // A paid retry re-sending its spent authorization (its refusal deferred to the
  // Idempotency-Key replay) is the payer's, not anonymous: it may send the body it paid for.
  const anonymous =
    request.credential?.kind === "none" &&
    request.deferredRefusal === null &&
    access !== "internal";
  return anonymous ? Math.min(routeLimit, limits.maxAnonymousBodyBytes) : routeLimit;
}

/** The declared body length, or null for a body of unknown length (chunked). */
function declaredLength(request: FastifyRequest): number | null {
  const text = request.headers["content-length"];
  if (text !== undefined && /^\d+$/.test(text)) return Number(text);
  return request.headers["transfer-encoding"] === undefined ? 0 : null;
}

export function registerBodyAdmission(
  app: FastifyInstance,
  budget: MemoryBudget,
  uploads: UploadSlots,
): void {
  const { limits } = app.serviceConfig;
  app.decorate("memoryBudget", budget);
  app.decorateRequest("memoryHold", null);
  app.decorateRequest("admittedBodyBytes", null);

  app.addHook("preParsing", async (request, reply, payload) => {
    const limit = bodyLimitOf(request, limits);
    request.admittedBodyBytes = limit;
    if (reply.sent || isHealthCheck(request)) return payload;
    const declared = declaredLength(request);
    // A refusal here leaves the body unread: the connection cannot carry another request.
    const refuse = (answer: Answer) => {
      if (declared !== 0) reply.header("connection", "close");
      return sendAnswer(reply, answer);
    };
    if (declared !== null && declared > limit) {
      return refuse(errorAnswer("body_too_large", { limit }));
    }
    let slot: UploadSlot | null = null;
    if (request.routeOptions.config.uploadsPerKey === true) {
      slot = await uploads.acquire(request.principal);
      if (slot === null) {
        reply.header("retry-after", "1");
        return refuse(
          errorAnswer("too_many_uploads", {
            detail:
              "this key is already sending as many bodies as it may at once; retry when one is answered",
            limit: uploads.limit,
          }),
        );
      }
      // The client may have gone while the slot was asked for (a Redis round trip): its close
      // has passed, so nothing below would ever release it.
      const socket = request.raw.socket as Socket | undefined;
      if (socket?.destroyed === true || reply.raw.destroyed) {
        slot.release();
        return payload;
      }
    }
    const bodyBytes = Math.min(declared ?? limit, limit);
    const share = fairShareKey(request);
    const refused = budget.tryHold(share, bodyBytes);
    if (refused !== null) {
      slot?.release();
      reply.header("retry-after", "1");
      return refuse(
        errorAnswer("memory_budget_exceeded", {
          detail:
            refused === "share"
              ? "this client's requests already hold its share of the server's memory (MEMORY_SHARE_PERCENT); retry when one is answered"
              : "the server holds as much request and answer data as it may; retry shortly",
        }),
      );
    }
    const hold: MemoryHold = { share, bytes: bodyBytes, open: true };
    request.memoryHold = hold;
    const release = () => {
      if (!hold.open) return;
      hold.open = false;
      budget.release(hold.share, hold.bytes);
      hold.bytes = 0;
      forget();
      slot?.release();
    };
    // The socket too: Node never closes the answers still queued behind a pipelined one
    // when the connection goes.
    const forget = onSocketClose(request.raw.socket as Socket | undefined, release);
    reply.raw.once("close", release);
    // Only now is the client asked for its body.
    const expectation = request.headers.expect;
    if (
      expectation !== undefined &&
      request.raw.httpVersion === "1.1" &&
      CONTINUE_EXPECTATION.test(expectation) &&
      !reply.raw.headersSent
    ) {
      reply.raw.writeContinue();
    }
    return payload;
  });

  // The answer, once built, is held until it is written out (or the connection closes).
  // Callback-style: it never waits, so no promise per request (issue 33).
  app.addHook("onSend", (request, _reply, payload, done) => {
    const hold = request.memoryHold;
    if (hold?.open) {
      const bytes =
        typeof payload === "string"
          ? Buffer.byteLength(payload)
          : Buffer.isBuffer(payload)
            ? payload.length
            : 0;
      budget.hold(hold.share, bytes);
      hold.bytes += bytes;
    }
    done(null, payload);
  });
}

/**
 * Request bodies reach handlers as the raw bytes, whatever the Content-Type says: the main
 * thread never parses JSON, a worker parses it strictly (verifier.md §1.2) where the CPU
 * work belongs. A body is read up to the limit its admission set, and refused `413
 * body_too_large` as soon as it passes it, so it is never held whole.
 */
export function registerRawBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (request, payload, done) => {
    readBody(request, payload, done);
  });
}

export const rawBodyParser = fastifyPlugin(
  async (app: FastifyInstance) => registerRawBodyParser(app),
  {
    name: PLATFORM.rawBody,
    fastify: FASTIFY_VERSION,
  },
);

/**
 * After access control: a body is admitted per principal (`uploadsPerKey`), so the request's
 * principal must be known by `preParsing`.
 */
export const bodyAdmission = fastifyPlugin(
  async (app: FastifyInstance) =>
    registerBodyAdmission(
      app,
      new MemoryBudget(
        app.serviceConfig.http.memoryBudgetBytes,
        app.serviceConfig.http.memorySharePercent,
      ),
      app.backends.uploads,
    ),
  {
    name: PLATFORM.bodyAdmission,
    fastify: FASTIFY_VERSION,
    dependencies: [PLATFORM.config, PLATFORM.access, PLATFORM.backends],
    decorators: { fastify: ["serviceConfig"], request: ["principal"] },
  },
);

function readBody(
  request: FastifyRequest,
  payload: Readable,
  done: (error: Error | null, body?: Buffer) => void,
): void {
  const limit = request.admittedBodyBytes ?? request.routeOptions.bodyLimit ?? 0;
  const declared = declaredLength(request);
  // A body of declared length (admission already refused one over the limit, and holds its
  // bytes in the memory budget) is copied into one buffer of its own as it arrives: each
  // socket read is garbage at once, where collecting the reads and concatenating them at the
  // end held every body twice at its peak (issue 33: 16 concurrent 1 MiB bodies). The buffer
  // fills its own ArrayBuffer, so it is moved to a worker without a copy (`transferableBody`).
  // A chunked body, of unknown length, is collected and concatenated.
  const whole = declared !== null && declared > 0 ? Buffer.allocUnsafeSlow(declared) : null;
  const chunks: Buffer[] = [];
  let received = 0;
  const finish = (error: Error | null, body?: Buffer) => {
    payload.off("data", onData);
    payload.off("end", onEnd);
    payload.off("error", onError);
    done(error, body);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) {
      finish(new ServiceError("body_too_large", { limit }));
      return;
    }
    if (whole === null) chunks.push(chunk);
    else if (received <= whole.length) chunk.copy(whole, received - chunk.length);
  };
  const onEnd = () => {
    if (declared !== null && received !== declared) {
      finish(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    finish(null, whole ?? Buffer.concat(chunks, received));
  };
  const onError = (error: Error & { statusCode?: number }) => {
    if (!(typeof error.statusCode === "number" && error.statusCode >= 400)) error.statusCode = 400;
    finish(error);
  };
  payload.on("data", onData);
  payload.on("end", onEnd);
  payload.on("error", onError);
  payload.resume();
}
