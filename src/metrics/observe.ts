/**
 * A counting wrapper around the document store for `/metrics`. Wrapping the interface counts
 * every caller (routes, queue processors, the key store) in one place, so no route has to
 * remember to.
 */
import {
  type DocumentStore,
  DocumentStoreUnavailableError,
  type StoreSpace,
} from "../storage/document-store.js";
import type { StoreErrorKind, StoreOperation } from "./metrics.js";

export type StoreErrorCounter = (operation: StoreOperation, kind: StoreErrorKind) => void;

/** `store`, counting each failed operation; failures are passed on unchanged. */
export function observeDocumentStore(
  store: DocumentStore,
  count: StoreErrorCounter,
): DocumentStore {
  const counted = async <T>(operation: StoreOperation, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      count(operation, error instanceof DocumentStoreUnavailableError ? "unavailable" : "other");
      throw error;
    }
  };
  return {
    get: (collection, id) => counted("get", () => store.get(collection, id)),
    create: (collection, id, bytes) => counted("create", () => store.create(collection, id, bytes)),
    replace: (collection, id, expected, bytes) =>
      counted("replace", () => store.replace(collection, id, expected, bytes)),
    delete: (collection, id) => counted("delete", () => store.delete(collection, id)),
    list: (collection, prefix) => counted("list", () => store.list(collection, prefix)),
    ...(store.space === undefined
      ? {}
      : { space: () => (store.space as () => Promise<StoreSpace>)() }),
    close: () => store.close(),
  };
}
