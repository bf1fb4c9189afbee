/**
 * Piscina task module for `POST /erc8004/validate`. Thin on purpose: it hands the bytes to the
 * request handling in src/service. The validator key is read from DATA_DIR once per thread,
 * on the first validation, so threads that never validate never load it.
 */
import type { PrivateKeyAccount } from "viem/accounts";
import { openValidatorKey } from "../src/erc8004/validator-key.js";
import {
  answerValidateRequest,
  type Erc8004Answer,
  type Erc8004Task,
} from "../src/service/erc8004-request.js";
import { releasingHeap } from "../src/service/worker-heap.js";
import { context } from "./context.js";

let validator: PrivateKeyAccount | undefined;

const requestContext = {
  validator: () => {
    validator ??= openValidatorKey(context.dataDir);
    return validator;
  },
  now: Date.now,
  maxResultBytes: context.maxResultBytes,
};

export default releasingHeap(function erc8004(task: Erc8004Task): Promise<Erc8004Answer> {
  return answerValidateRequest(new Uint8Array(task.body), requestContext);
});
