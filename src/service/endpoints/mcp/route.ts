/**
 * The MCP tool surface (service.md §7): `POST /mcp`, JSON-RPC 2.0 over Streamable HTTP,
 * stateless with JSON responses; `GET`/`DELETE /mcp` → 405 (no server-to-client stream, no
 * sessions); and the server card. Headers are checked here; the body goes, unparsed, to a
 * worker (`worker.ts`) that answers every message, except that reading a stored revocation
 * document, the digest cache of `verify_bundle` and storing a notarization — I/O — come back
 * to this thread.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { dumpCompact } from "../../../verifier/json/dump.js";
import { queueWeightOfBody } from "../../cost.js";
import type { RunOptions } from "../../cpu-pool.js";
import { type Answer, errorAnswer, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { ifNoneMatchMatches, sendNotModified, strongEtag } from "../../http/stored-document.js";
import { authorisedUnits, keyedAccess, markKeyedWorkDone } from "../../plugins/access.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { chargeNoWork, chargeUnits, chargeWorkDone } from "../../work-charged.js";
import { route } from "../operation.js";
import { revocationDocumentCheckOn } from "../revocations/contract.js";
import type { McpReplyPart, McpTask } from "./answer.js";
import {
  getMcpServerCardOperation,
  getMcpServerCardSep2127Operation,
  mcpEndSessionOperation,
  mcpOpenStreamOperation,
  mcpOperation,
  mcpTask,
  preflightMcpServerCardOperation,
  preflightMcpServerCardSep2127Operation,
} from "./contract.js";
import { answerGetRevocations } from "./get-revocations.js";
import { answerNotarize } from "./notarize.js";
import { serverCard } from "./server-card.js";
import { acceptsJson, allowedOrigins, isAllowedOrigin, isJsonContentType } from "./transport.js";
import { answerCachedVerifyBundle, type VerifiedPart } from "./verify-bundle.js";

const JSON_TYPE = "application/json; charset=utf-8";

/** SEP-2127's location and media type; the contract's location serves plain JSON. */
const CARD_LOCATIONS = [
  {
    card: getMcpServerCardOperation,
    preflight: preflightMcpServerCardOperation,
    type: JSON_TYPE,
  },
  {
    card: getMcpServerCardSep2127Operation,
    preflight: preflightMcpServerCardSep2127Operation,
    type: "application/mcp-server-card+json; charset=utf-8",
  },
] as const;

/** A header field as one string (Node joins most repeated fields; a few arrive as arrays). */
function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * Why the transport refuses the request (service.md §7), before its body is read; null when
 * it does not. These are HTTP refusals, not JSON-RPC errors: no message was read yet.
 */
function transportRefusal(request: FastifyRequest, origins: ReadonlySet<string>): Answer | null {
  if (!isAllowedOrigin(headerValue(request, "origin"), origins)) {
    return errorAnswer("origin_not_allowed", {
      detail: "browser requests are accepted only from the service's configured public origins",
    });
  }
  if (!acceptsJson(headerValue(request, "accept"))) {
    return errorAnswer("not_acceptable", { detail: "Accept must allow application/json" });
  }
  if (!isJsonContentType(headerValue(request, "content-type"))) {
    return errorAnswer("unsupported_media_type", {
      detail: "Content-Type must be application/json",
    });
  }
  return null;
}

function sendServerCard(
  request: FastifyRequest,
  reply: FastifyReply,
  mediaType: string,
): FastifyReply {
  const bytes = Buffer.from(dumpCompact(serverCard(`${request.protocol}://${request.host}`)));
  const etag = strongEtag(bytes);
  reply
    .header("etag", etag)
    .header("cache-control", "public, max-age=3600")
    .header("access-control-allow-origin", "*")
    .header("access-control-expose-headers", "ETag");
  if (ifNoneMatchMatches(request.headers["if-none-match"], etag)) return sendNotModified(reply);
  return reply.code(200).type(mediaType).send(bytes);
}

export async function mcpRoutes(app: FastifyInstance) {
  const { payments, mcpAllowedOrigins } = app.serviceConfig;
  const origins = allowedOrigins(payments.publicBaseUrl, mcpAllowedOrigins);
  const { maxResultBytes } = app.serviceConfig.limits;
  const replyPart = async (
    part: McpReplyPart,
    options: RunOptions,
    authorised: number,
  ): Promise<VerifiedPart> => {
    if ("json" in part) return part;
    if ("verification" in part) {
      return answerCachedVerifyBundle(
        app.bundleVerifications,
        { ...part.verification, authorisedUnits: authorised },
        maxResultBytes,
        options,
      );
    }
    if ("notarization" in part) return answerNotarize(app.documentStore, part.notarization);
    return answerGetRevocations(
      app.documentStore,
      // Not the client's hang-up signal: the check is shared with concurrent readers.
      revocationDocumentCheckOn(app.cpuPool, { principal: options.principal }),
      part.revocations,
    );
  };

  route(app, mcpOperation, {
    handler: async (request, reply) => {
      const refusal = transportRefusal(request, origins);
      if (refusal !== null) return sendAnswer(reply, refusal);
      // Decided before the body is read, which only the worker does; it is applied only if
      // the body holds a `tools/call`, so discovery stays keyless.
      const access = keyedAccess(request);
      const body = transferableBody(request.body);
      const task: McpTask = {
        body,
        protocolVersion: headerValue(request, "mcp-protocol-version") ?? null,
        keyedAccess: access.granted,
        authorisedUnits: authorisedUnits(request),
      };
      const options = { clientGone: clientGone(reply), principal: fairShareKey(request) };
      const answer = await app.cpuPool.run(mcpTask, task, [body], {
        ...options,
        cost: queueWeightOfBody(body.byteLength),
      });
      if (answer.kind === "refusal") return sendAnswer(reply, answer.answer);
      if (answer.kind === "denied") {
        if (access.granted) throw new Error("the MCP worker denied a granted request");
        const { refusal } = access;
        return sendAnswer(reply.headers(refusal.headers), refusal);
      }
      if (answer.kind === "accepted") return reply.code(202).send();
      app.bundleVerifications.count(answer.verdicts);
      if (answer.units !== undefined) chargeUnits(reply, answer.units);
      const parts = await Promise.all(
        answer.parts.map((part) => replyPart(part, options, task.authorisedUnits ?? 1)),
      );
      // A cached `verify_bundle` is never in a batch, so its refusal is the whole reply.
      const tooLarge = parts.some((part) => part.tooLarge);
      // In-band tool errors (docs/access-decisions.md): a body of tool calls is charged, and
      // a payment settled, only when one of its calls carried work done, as its HTTP
      // endpoint's charged answer would. Discovery (no `tools/call`) follows its status.
      const charged = answer.charged === true || tooLarge;
      const workDone = charged || parts.some((part) => part.workDone);
      if (answer.toolCall !== null && workDone) markKeyedWorkDone(request, answer.toolCall);
      if (charged) chargeWorkDone(reply);
      else if (answer.toolCall !== null && !workDone) chargeNoWork(reply);
      const json = parts.map((part) => part.json);
      return reply
        .code(tooLarge ? 400 : answer.statusCode)
        .type(JSON_TYPE)
        .send(answer.batch ? `[${json.join(",")}]` : json[0]);
    },
  });

  for (const operation of [mcpOpenStreamOperation, mcpEndSessionOperation]) {
    route(app, operation, {
      handler: async (request, reply) =>
        sendAnswer(
          reply.header("allow", "POST"),
          errorAnswer("method_not_allowed", {
            detail: `${request.method} is not offered: this server is stateless; use POST`,
          }),
        ),
    });
  }

  for (const location of CARD_LOCATIONS) {
    route(app, location.card, {
      config: { cors: false },
      handler: async (request, reply) => sendServerCard(request, reply, location.type),
    });
    route(app, location.preflight, {
      config: { cors: false },
      handler: async (_request, reply) =>
        reply
          .code(204)
          .header("access-control-allow-origin", "*")
          .header("access-control-allow-methods", "GET")
          .header("access-control-allow-headers", "Content-Type, If-None-Match")
          .header("access-control-max-age", "86400")
          .send(),
    });
  }
}
