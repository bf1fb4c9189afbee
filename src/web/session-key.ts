/**
 * The evaluation key a person chose, on this page, to use for "Verify on the server as well".
 * It lives in this module's memory only: never in localStorage, sessionStorage, a cookie or
 * the URL, so it is gone when the page is closed or reloaded.
 */
let current: string | null = null;

export function sessionKey(): string | null {
  return current;
}

export function setSessionKey(key: string | null): void {
  current = key;
}
