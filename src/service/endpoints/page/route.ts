/**
 * The verification page (issue 17): `GET /` and its assets (script, style, Web Worker), built by `npm run build`
 * (`scripts/build-web.mjs`) into `dist/web/`. The page verifies in the browser; the service
 * only hands out static files:
 *
 * - access class `static`: no key, never counted against a cap, never charged;
 * - `index.html` is revalidated on every load (`no-cache`, with an ETag), while the assets,
 *   whose names carry a hash of their content, may be kept for a year (`immutable`);
 * - brotli or gzip copies made at build time are sent to browsers that take them;
 * - a strict Content-Security-Policy: scripts, styles and requests only from this origin,
 *   no inline code, no framing, no forms posting anywhere, no plugins.
 *
 * `VERIFICATION_PAGE=off` registers none of it: `GET /` and `/assets/…` answer `404 not_found`.
 *
 * The routes are not in `/openapi.json`: the page is not an API operation, and its asset
 * names change with every build.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  // blob: for the worker started from its script as fetched at load and checked against its
  // SRI hash, so the page verifies offline (src/web/verify-client.ts; docs/web-page.md).
  "worker-src 'self' blob:",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
  "require-trusted-types-for 'script'",
  // One policy, which allows only the page's own worker script, by its URL or as the Blob URL
  // of its checked bytes (src/web/verify-client.ts).
  "trusted-types receiptd-worker",
].join("; ");

/** Sent with the page and its assets. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-security-policy": PAGE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
};

export const INDEX_CACHE_CONTROL = "no-cache";
export const ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable";

/** What `scripts/build-web.mjs` writes beside the page. */
interface BuildInfo {
  assets: string[];
}

/**
 * `dist/web` of this installation: beside `dist/src` when running the build (and in the npm
 * package), or `dist/web` of the checkout when running the TypeScript sources (tests).
 */
export function locateWebRoot(): string | null {
  for (const candidate of ["../../../../web/", "../../../../dist/web/"]) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(`${path}build.json`)) return path;
  }
  return null;
}

export async function pageRoutes(app: FastifyInstance) {
  if (!app.serviceConfig.verificationPage) return;
  const root = locateWebRoot();
  if (root === null) {
    app.log.warn(
      "the verification page is not built (no dist/web): GET / answers 404; run npm run build",
    );
    return;
  }
  const info = JSON.parse(readFileSync(`${root}build.json`, "utf8")) as BuildInfo;
  const assets = new Set(info.assets);
  await app.register(fastifyStatic, { root, serve: false, preCompressed: true });

  const send = (reply: FastifyReply, file: string, cacheControl: string) => {
    reply.headers(PAGE_HEADERS).header("cache-control", cacheControl);
    return reply.sendFile(file, { cacheControl: false, lastModified: false });
  };
  const routeOptions = { schema: { hide: true }, config: { access: "static" as const } };

  app.get("/", routeOptions, (_request, reply) => send(reply, "index.html", INDEX_CACHE_CONTROL));
  app.get<{ Params: { file: string } }>("/assets/:file", routeOptions, (request, reply) => {
    if (!assets.has(request.params.file)) return reply.callNotFound();
    return send(reply, `assets/${request.params.file}`, ASSET_CACHE_CONTROL);
  });
}
