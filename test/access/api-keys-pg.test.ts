/** API keys over the PostgreSQL document store (distributed mode): the shared key-store contract. */
import { PgDocumentStore } from "../../src/storage/pg-document-store.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";
import { keyStoreContract } from "./key-store-contract.js";

keyStoreContract("PgDocumentStore", async () => {
  const schema = privateSchema();
  const store = await PgDocumentStore.open({ url: DATABASE_URL, schema });
  return {
    store,
    async dispose() {
      await store.close();
      await dropSchema(schema);
    },
  };
});
