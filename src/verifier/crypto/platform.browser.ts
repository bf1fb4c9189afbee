/**
 * The crypto implementation the browser page starts with: @noble/curves and @noble/hashes.
 * `scripts/build-web.mjs` substitutes this module for `platform.ts` when it bundles the page.
 */
export { nobleCrypto as platformCrypto } from "./noble.js";

/** The page never signs. */
export const platformEd25519Sign = null;
