/**
 * Memory crystals (service.md §6): `POST /crystals` stores a sealed envelope for a tenant,
 * `GET /crystals/{crystal_id}` serves it back to whoever names its tenant, and
 * `GET /crystals/lineage` lists a tenant's crystals as a DAG. Bodies are checked on a worker
 * (`answer.ts`); storage and tenant ownership are src/crystals/store.ts.
 *
 * Reads never reveal more than the tenant hash they were given unlocks: a crystal of another
 * tenant and a crystal that does not exist are the same 404, and an unknown tenant has an
 * empty lineage. No route lists tenants.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  type PreparedCrystal,
  readCrystal,
  readLineageSummaries,
  type StoreOutcome,
  storeCrystal,
} from "../../../crystals/store.js";
import { type Answer, errorAnswer, sendAnswer } from "../../errors.js";
import { fairShareKey } from "../../fair-share.js";
import { clientGone } from "../../http/client-gone.js";
import { sendStoredDocument } from "../../http/stored-document.js";
import { fromStore } from "../../library-errors.js";
import { transferableBody } from "../../plugins/raw-body.js";
import { route } from "../operation.js";
import type { CrystalLineageTask, CrystalPostTask } from "./answer.js";
import {
  getCrystalLineageOperation,
  getCrystalOperation,
  lineageTask,
  prepareCrystalTask,
  storeCrystalOperation,
  TENANT_HEADER,
} from "./contract.js";

/** Crystals are one tenant's state: no shared cache may keep them. */
const PRIVATE_NO_STORE = "private, no-store";
/** Reads accept hex of either case and look it up in lower case, the only case stored. */
const SHA256_ID_ANY_CASE = /^sha256:[0-9a-fA-F]{64}$/;

const STORE_UNAVAILABLE_DETAIL = "the crystal store cannot be reached right now, retry";

interface TenantQuery {
  tenant?: unknown;
}

/** A read parameter as the lower-case id it names, or null when it is not an id. */
function readId(value: unknown): string | null {
  return typeof value === "string" && SHA256_ID_ANY_CASE.test(value) ? value.toLowerCase() : null;
}

/** The tenant a read names, from `X-Tenant-Hash` or `?tenant=`; both must agree. */
function requestedTenant(request: FastifyRequest<{ Querystring: TenantQuery }>): string | Answer {
  const header = request.headers[TENANT_HEADER];
  const query = request.query.tenant;
  if (header === undefined && query === undefined) {
    return errorAnswer("missing_tenant", {
      detail: "name the tenant: X-Tenant-Hash or ?tenant=",
    });
  }
  const fromHeader = header === undefined ? undefined : readId(header);
  const fromQuery = query === undefined ? undefined : readId(query);
  if (fromHeader === null || fromQuery === null) {
    return errorAnswer("invalid_tenant_hash", {
      detail: "the tenant must be sha256: and 64 hex digits",
    });
  }
  if (fromHeader !== undefined && fromQuery !== undefined && fromHeader !== fromQuery) {
    return errorAnswer("ambiguous_tenant", {
      detail: "X-Tenant-Hash and ?tenant= name different tenants",
    });
  }
  return (fromHeader ?? fromQuery) as string;
}

export async function crystalRoutes(app: FastifyInstance) {
  const { limits } = app.serviceConfig;

  route(app, storeCrystalOperation, {
    bodyLimit: limits.maxCrystalBodyBytes,
    config: { uploadsPerKey: true, idempotent: true },
    handler: async (request, reply) => {
      const body = transferableBody(request.body);
      const task: CrystalPostTask = {
        kind: "post",
        body,
        maxCiphertextBytes: limits.maxCrystalCiphertextBytes,
      };
      const answer = await app.cpuPool.run(prepareCrystalTask, task, [body], {
        clientGone: clientGone(reply),
        principal: fairShareKey(request),
      });
      if (answer.kind === "reply") return sendAnswer(reply, answer);
      const crystal: PreparedCrystal = answer;
      const outcome: StoreOutcome = await fromStore(
        reply,
        "crystals",
        STORE_UNAVAILABLE_DETAIL,
        () =>
          storeCrystal(app.documentStore, request.principal, crystal, {
            tenantBytes: limits.crystalTenantQuotaBytes,
            principalBytes: limits.crystalPrincipalQuotaBytes,
          }),
      );
      if (typeof outcome === "object") {
        const { quotaExceeded, quotaBytes, usedBytes } = outcome;
        const whose = quotaExceeded === "tenant" ? "this tenant" : "this principal";
        return sendAnswer(
          reply,
          errorAnswer("crystal_quota_exceeded", {
            detail: `${whose} holds ${usedBytes} bytes of crystals; the quota is ${quotaBytes} (${quotaExceeded === "tenant" ? "CRYSTAL_TENANT_QUOTA_BYTES" : "CRYSTAL_KEY_QUOTA_BYTES"})`,
          }),
        );
      }
      if (outcome !== "created" && outcome !== "unchanged") {
        return sendAnswer(reply, errorAnswer(outcome));
      }
      const stored = {
        stored: true,
        crystal_id: crystal.crystalId,
        parent_crystal_id: crystal.parentCrystalId,
        tenant_hash: crystal.tenantHash,
        size_bytes: crystal.sizeBytes,
      };
      if (outcome === "unchanged") return reply.code(200).send(stored);
      return reply
        .code(201)
        .header("location", `/crystals/${crystal.crystalId}?tenant=${crystal.tenantHash}`)
        .send(stored);
    },
  });

  // A static path: the router prefers it to `/crystals/:crystal_id`, so it is never read as an id.
  route<{ Querystring: TenantQuery }>(app, getCrystalLineageOperation, {
    attachValidation: true,
    handler: async (request, reply) => {
      reply.header("cache-control", PRIVATE_NO_STORE);
      const tenantHash = requestedTenant(request);
      if (typeof tenantHash !== "string") return sendAnswer(reply, tenantHash);
      const summaries = await fromStore(reply, "crystals", STORE_UNAVAILABLE_DETAIL, () =>
        readLineageSummaries(app.documentStore, tenantHash),
      );
      const task: CrystalLineageTask = { kind: "lineage", tenantHash, summaries };
      const json = await app.cpuPool.run(lineageTask, task, [], {
        clientGone: clientGone(reply),
        principal: fairShareKey(request),
      });
      return sendAnswer(reply, { statusCode: 200, json });
    },
  });

  route<{ Params: { crystal_id: string }; Querystring: TenantQuery }>(app, getCrystalOperation, {
    attachValidation: true,
    handler: async (request, reply) => {
      reply.header("cache-control", PRIVATE_NO_STORE);
      const crystalId = readId(request.params.crystal_id);
      if (crystalId === null) {
        const detail = "crystal_id must be sha256: and 64 hex digits";
        return sendAnswer(reply, errorAnswer("invalid_crystal_id", { detail }));
      }
      const tenantHash = requestedTenant(request);
      if (typeof tenantHash !== "string") return sendAnswer(reply, tenantHash);
      const envelope = await fromStore(reply, "crystals", STORE_UNAVAILABLE_DETAIL, () =>
        readCrystal(app.documentStore, tenantHash, crystalId),
      );
      // One answer for "not in this tenant" and "nowhere": no existence oracle across tenants.
      if (envelope === null) return sendAnswer(reply, errorAnswer("crystal_not_found"));
      return sendStoredDocument(request, reply, envelope, {
        cacheControl: PRIVATE_NO_STORE,
        etag: `"${crystalId}"`,
      });
    },
  });
}
