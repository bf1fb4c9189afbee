/**
 * An endpoint's contract, and the one way a route is registered from it. Each operation is
 * declared once, in its folder's `contract.ts`, with everything a client and the platform read
 * of it: method and path, its stable name (`operationId`, summary, tag), its access class, its
 * schemas and the refusals it answers itself. `route(app, operation, handler)` registers it
 * with all of that in the route's config, where access control (`config.access`) and
 * `/openapi.json` (`config.operation`, `config.refusals`) read it, so no central table restates
 * a route.
 *
 * Both threads import contracts (the worker for its task definitions), so this module stays
 * light: types, and helpers whose imports are the platform's small modules.
 */
import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  HTTPMethods,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from "fastify";
import type { ServiceConfig } from "../config.js";
import { queueWeightOfBody } from "../cost.js";
import { type Answer, type ErrorCode, sendAnswer } from "../errors.js";
import { fairShareKey } from "../fair-share.js";
import { clientGone } from "../http/client-gone.js";
import type { RouteAccess } from "../plugins/access.js";
import { transferableBody } from "../plugins/raw-body.js";
import type { TaskDefinition } from "../tasks/define-task.js";

/** The groups of `/openapi.json`; their descriptions are in `meta/openapi.ts`. */
export type Tag =
  | "verification"
  | "anchors"
  | "notarization"
  | "revocations"
  | "payments"
  | "erc8004"
  | "crystals"
  | "mcp"
  | "conformance"
  | "keys"
  | "meta";

/**
 * An operation's stable name. Generated clients take their method names from `operationId`,
 * so a name is part of the contract and is chosen, not derived from the path.
 */
export interface OperationName {
  operationId: string;
  summary: string;
  tag: Tag;
}

export interface OperationContract<Schema extends FastifySchema = FastifySchema>
  extends OperationName {
  method: HTTPMethods;
  url: string;
  access: RouteAccess;
  /** The schemas; a function of the configuration when a description names a configured limit. */
  schema: Schema | ((config: ServiceConfig) => Schema);
  /**
   * The refusals this operation answers itself, besides those every route of its access class
   * and shape can answer (which `/openapi.json` derives). Each is documented under its status
   * in `ERROR_STATUS`; a code named here is not listed again in that status's description.
   */
  refusals: readonly ErrorCode[];
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Set by `route()` from the contract: the operation's name in `/openapi.json`. */
    operation?: OperationName;
    /** Set by `route()` from the contract: the refusals the operation answers itself. */
    refusals?: readonly ErrorCode[];
  }
}

/** Declares an operation of a `contract.ts`; the literal types of its schemas are kept. */
export function defineOperation<const Schema extends FastifySchema>(
  operation: OperationContract<Schema>,
): OperationContract<Schema> {
  return operation;
}

/** The schemas of `operation` as this deployment states them. */
export function operationSchema<Schema extends FastifySchema>(
  operation: OperationContract<Schema>,
  config: ServiceConfig,
): Schema {
  return typeof operation.schema === "function" ? operation.schema(config) : operation.schema;
}

/** What a route adds to its contract: Fastify options that are not part of the contract. */
export interface RouteExtras {
  /** The handler reads `request.validationError` and answers the contract's own code. */
  attachValidation?: boolean;
  /** A body limit of the route's own (crystals carry more than other JSON bodies). */
  bodyLimit?: number;
  /** More route config for the platform's plugins (`cors`, `uploadsPerKey`). */
  config?: Omit<FastifyContextConfig, "access" | "operation" | "refusals">;
}

/** Method, URL, schemas and the route config of `operation`, for `app.route`. */
export function routeOptions(
  app: FastifyInstance,
  operation: OperationContract,
  extras: RouteExtras = {},
) {
  const { operationId, summary, tag } = operation;
  return {
    method: operation.method,
    url: operation.url,
    schema: operationSchema(operation, app.serviceConfig),
    ...(extras.attachValidation === undefined ? {} : { attachValidation: extras.attachValidation }),
    ...(extras.bodyLimit === undefined ? {} : { bodyLimit: extras.bodyLimit }),
    config: {
      ...extras.config,
      access: operation.access,
      operation: { operationId, summary, tag },
      refusals: operation.refusals,
    },
  };
}

/** Registers `operation` with its handler (and the route's extras, if any). */
export function route<RouteGeneric extends RouteGenericInterface = RouteGenericInterface>(
  app: FastifyInstance,
  operation: OperationContract,
  options: RouteExtras & {
    handler: RouteHandlerMethod<
      RawServerDefault,
      RawRequestDefaultExpression,
      RawReplyDefaultExpression,
      RouteGeneric
    >;
  },
): void {
  app.route<RouteGeneric>({ ...routeOptions(app, operation, options), handler: options.handler });
}

/**
 * The pass-through shape: the raw body moves, unparsed, to a worker that answers the request
 * (the task has the pool's deadline and stops when its client hangs up). `inputOf` builds the
 * task's input around the moved body.
 */
export function workerRoute<Input>(
  app: FastifyInstance,
  operation: OperationContract,
  task: TaskDefinition<Input, Answer | Promise<Answer>>,
  inputOf: (body: ArrayBuffer, request: FastifyRequest) => Input,
): void {
  route(app, operation, {
    handler: async (request, reply: FastifyReply) => {
      const body = transferableBody(request.body);
      const answer = await app.cpuPool.run(task, inputOf(body, request), [body], {
        clientGone: clientGone(reply),
        principal: fairShareKey(request),
        cost: queueWeightOfBody(body.byteLength),
      });
      return sendAnswer(reply, answer);
    },
  });
}
