/** The worker task that checks a stored revocation document before it is served. */
import { defineTask } from "../../tasks/define-task.js";
import type { RevocationDocumentTask } from "./documents.js";

/** True when the document is one the service can vouch for. */
export const checkRevocationDocumentTask = defineTask<RevocationDocumentTask, boolean>(import.meta.url);
