/**
 * The crypto implementation a platform starts with: OpenSSL through `node:crypto` on the
 * server. The browser build resolves this module to `platform.browser.ts` instead.
 */
export { nodeCrypto as platformCrypto } from "./node.js";
