/**
 * The few requests the page makes to the service that served it, all same-origin and all
 * optional: none carries a bundle unless the person asks for server verification, and the
 * page keeps working when they fail (offline, say).
 */

import { evaluationTermsOf, type TermsState } from "./evaluation-key.js";

export interface ServiceInfo {
  issuer: string | null;
  service: string | null;
  /** Whether and on what terms the service issues evaluation keys. */
  evaluationKeys: TermsState;
}

let info: Promise<ServiceInfo> | null = null;

/**
 * `GET /info` once per page, when first needed: it names the key that signs this service's
 * receipts and the terms of evaluation keys. (Like any keyless read it counts against the
 * anonymous cap, so the page does not ask for it on load.)
 */
export function serviceInfo(): Promise<ServiceInfo> {
  info ??= fetch("/info", { cache: "no-store", credentials: "omit" })
    .then(async (response) => {
      if (!response.ok) throw new Error(`/info answered HTTP ${response.status}`);
      const body = (await response.json()) as Record<string, unknown>;
      return {
        issuer: typeof body.issuer === "string" ? body.issuer : null,
        service: typeof body.service === "string" ? body.service : null,
        evaluationKeys: evaluationTermsOf(body),
      };
    })
    .catch((error: unknown) => {
      info = null;
      throw error;
    });
  return info;
}

export type RevocationLookup =
  | { found: true; url: string; bytes: Uint8Array }
  | { found: false; url: string; why: string };

/** `GET /revocations/{issuer}`: the revocation document this service vouches for, if any. */
export async function serviceRevocations(issuer: string): Promise<RevocationLookup> {
  const url = new URL(`/revocations/${encodeURIComponent(issuer)}`, location.href).href;
  let response: Response;
  try {
    response = await fetch(url, { cache: "no-store", credentials: "omit" });
  } catch {
    return { found: false, url, why: "the service could not be reached" };
  }
  if (response.status === 404) {
    return { found: false, url, why: "this service publishes no revocation document for it" };
  }
  if (!response.ok)
    return { found: false, url, why: `the service answered HTTP ${response.status}` };
  return { found: true, url, bytes: new Uint8Array(await response.arrayBuffer()) };
}

export interface ServerVerification {
  status: number;
  /** The parsed answer, when it is JSON. */
  body: Record<string, unknown> | null;
  text: string;
}

/**
 * `POST /verify?receipt=1` with the person's API key. The key is used for this one request
 * and kept nowhere: not in storage, not in the URL, not in a cookie.
 */
export async function verifyOnServer(
  bundle: Uint8Array,
  key: string,
  requireAnchor: boolean,
): Promise<ServerVerification> {
  const query = requireAnchor ? "?receipt=1&require_anchor=1" : "?receipt=1";
  const response = await fetch(`/verify${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: Uint8Array.from(bundle),
    cache: "no-store",
    credentials: "omit",
  });
  const text = await response.text();
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      body = parsed as Record<string, unknown>;
    }
  } catch {
    body = null;
  }
  return { status: response.status, body, text };
}
