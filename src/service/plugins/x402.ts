/**
 * x402 at the door (service.md §9, protocols.md §1): the challenge for an unpaid call, the
 * local checks of a payment (decoding, requirement match, EIP-3009 signature recovery,
 * validity window), the nonce reservation and the facilitator's `/verify` before the
 * handler runs; and, once the handler has answered, the facilitator's `/settle` while the
 * response is held. A response whose settlement fails is never delivered, and one that names
 * its transaction is delivered only once the receipt job is durable.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { PaymentOutcome } from "../../metrics/metrics.js";
import {
  encodeChallenge,
  encodeSettlementResponse,
  paymentFromHeaders,
} from "../../payments/codec.js";
import {
  type CheckedPayment,
  checkExactPayment,
  recoverCheckedPayment,
  type VerifiedPayment,
} from "../../payments/eip3009.js";
import { PaymentError } from "../../payments/errors.js";
import { type FacilitatorClient, facilitatorRequest } from "../../payments/facilitator-client.js";
import {
  type NonceKey,
  type NonceLedger,
  reservationExpiryMs,
} from "../../payments/nonce-ledger.js";
import { issuePassToken, PASS_TOKEN_HEADER, type PassKind } from "../../payments/pass-token.js";
import {
  type OfferKind,
  type PaymentOption,
  type PaymentRequirementSet,
  type PaymentSettings,
  paymentRequirements,
} from "../../payments/requirements.js";
import type { IntendedSettlement, SettlementIntents } from "../../payments/settlement-intents.js";
import type { Settlement, SettlementCall } from "../../payments/settlement-receipt.js";
import type { SignatureChecks } from "../../payments/signature-budget.js";
import type { Ed25519Signer } from "../../verifier/crypto/ed25519.js";
import {
  type Answer,
  type ErrorCode,
  type ErrorCodeWithStatus,
  type ErrorFields,
  errorAnswer,
} from "../errors.js";

/** A payment checked locally and by the facilitator, waiting for the handler's answer. */
export interface PendingPayment {
  verified: VerifiedPayment<PaymentOption>;
  nonce: NonceKey;
  /** The route template the payment was for (settlement receipts name it). */
  route: string;
}

export interface X402GateOptions {
  settings: PaymentSettings;
  /** Null when `FACILITATOR_URL` is unset: payments are offered but cannot be taken. */
  facilitator: FacilitatorClient | null;
  nonces: NonceLedger;
  /** Where resources are named in challenges (`resource.url`); never the client's Host. */
  publicBaseUrl: string;
  clock: () => number;
  /** The service key, for pass tokens (follows rotation). */
  signer: () => Ed25519Signer;
  /**
   * Told about every settled payment (it feeds the settlements queue); the held response is
   * released only once it resolves, which it does once the receipt job is durable. Must not
   * reject.
   */
  onSettled: (settlement: Settlement) => Promise<void>;
  /** Told how each presented payment ended, exactly once (`/metrics`). */
  onOutcome?: (outcome: PaymentOutcome) => void;
  /** How often signatures may be recovered, per client and for the process. */
  signatureBudget: SignatureChecks;
  /** The client a request is counted as in `signatureBudget` (never its address itself). */
  clientOf: (request: FastifyRequest) => string;
  /** Told each time a signature is recovered (`/metrics`): the costly step. */
  onSignatureCheck?: () => void;
  /** Where each settlement's intent is journaled before `/settle` (settlement-intents.ts). */
  intents?: SettlementIntents;
}

/**
 * A refusal at the door (access, caps, payments): an answer the access plugin sends as is,
 * with the headers it needs (`WWW-Authenticate`, `PAYMENT-REQUIRED`, `Retry-After`, …).
 */
export interface AccessRefusal extends Answer {
  headers: Record<string, string>;
}

/** The refusal of `code`, its status from the table. */
export function accessRefusal(
  code: ErrorCode,
  fields: ErrorFields = {},
  headers: Record<string, string> = {},
): AccessRefusal {
  return { ...errorAnswer(code, fields), headers };
}

/** Why a challenge offers a payment again: one of our 402 codes. */
export type ChallengeCode = ErrorCodeWithStatus<402>;

export type PaymentCheck =
  | { ok: true; pending: PendingPayment }
  | {
      ok: false;
      refusal: AccessRefusal;
      /**
       * The payer (its signature recovered) of an authorization refused as spent, by the
       * nonce ledger (`nonce_already_used`) or by the facilitator (declined, e.g. its
       * `invalid_transaction_state` once a reservation has expired): a retry may be owed its
       * first answer (plugins/idempotency.ts).
       */
      spentBy?: string;
    };

/** Which offers a route sells: per call, or a lease and a day pass. */
export type Sale = "call" | "pass";

const OFFERS: Readonly<Record<Sale, readonly OfferKind[]>> = {
  call: ["call"],
  pass: ["lease", "day"],
};

export class X402Gate {
  readonly #options: X402GateOptions;
  readonly #requirements = new Map<string, PaymentRequirementSet>();

  constructor(options: X402GateOptions) {
    this.#options = options;
  }

  /** Whether a request carries a payment header at all. */
  static presentsPayment(request: FastifyRequest): boolean {
    const headers = request.headers;
    return headers["x-payment"] !== undefined || headers["payment-signature"] !== undefined;
  }

  #requirementsFor(route: string, sale: Sale): PaymentRequirementSet {
    const cacheKey = `${sale} ${route}`;
    let set = this.#requirements.get(cacheKey);
    if (set === undefined) {
      set = paymentRequirements(this.#options.settings, {
        resource: {
          url: new URL(route, this.#options.publicBaseUrl).href,
          description: `receiptd ${route}`,
        },
        offers: OFFERS[sale],
      });
      this.#requirements.set(cacheKey, set);
    }
    return set;
  }

  /** The 402 for `route`: the v1 JSON body and the v2 `PAYMENT-REQUIRED` header. */
  challenge(route: string, sale: Sale, error: ChallengeCode = "payment_required"): AccessRefusal {
    return this.#challenge(route, sale, error);
  }

  /**
   * The 402 after the facilitator declined: its x402 reason is passed on as the protocol's own
   * term (protocols.md §1.5), not one of our codes, so a client reads it as the facilitator
   * gave it.
   */
  #declined(route: string, sale: Sale, reason: string): AccessRefusal {
    return this.#challenge(route, sale, reason);
  }

  #challenge(route: string, sale: Sale, error: string): AccessRefusal {
    const encoded = encodeChallenge(this.#requirementsFor(route, sale), error);
    return {
      statusCode: 402,
      json: encoded.body,
      headers: { "payment-required": encoded.paymentRequired },
    };
  }

  /**
   * The checks that come before the handler, cheapest first: decode; match the offer and
   * check payTo, amount, validity window and the signature's form (no hashing); take a
   * signature check from the client's share (issue 22: a refusal here costs no hashing
   * either); recover the signer; reserve the nonce (a replay is refused here, without asking
   * the facilitator); then the facilitator's `/verify`. `chargePayer` runs once the payer is
   * known, before the nonce is spent; it may refuse (daily cap).
   */
  async check(
    request: FastifyRequest,
    route: string,
    sale: Sale,
    chargePayer: (payer: string) => Promise<AccessRefusal | null>,
  ): Promise<PaymentCheck> {
    const refuse = (
      refusal: AccessRefusal,
      outcome: PaymentOutcome = "invalid",
      spentBy?: string,
    ): PaymentCheck => {
      this.#options.onOutcome?.(outcome);
      return spentBy === undefined ? { ok: false, refusal } : { ok: false, refusal, spentBy };
    };
    const requirements = this.#requirementsFor(route, sale);
    let checked: CheckedPayment<PaymentOption>;
    try {
      const payment = paymentFromHeaders(request.headers);
      if (payment === null) return refuse(this.challenge(route, sale));
      checked = checkExactPayment(payment, requirements.options, { now: this.#options.clock });
    } catch (error) {
      if (!(error instanceof PaymentError)) throw error;
      return refuse(this.challenge(route, sale, error.code));
    }
    const share = await this.#options.signatureBudget.take(this.#options.clientOf(request));
    if (share !== "granted") {
      const code = share === "client" ? "payment_rate_limited" : "overloaded";
      return refuse(accessRefusal(code, {}, { "retry-after": "1" }), "limited");
    }
    let verified: VerifiedPayment<PaymentOption>;
    try {
      this.#options.onSignatureCheck?.();
      verified = await recoverCheckedPayment(checked);
    } catch (error) {
      if (!(error instanceof PaymentError)) throw error;
      return refuse(this.challenge(route, sale, error.code));
    }
    const capRefusal = await chargePayer(verified.payer);
    if (capRefusal !== null) return refuse(capRefusal, "capped");

    const nonce: NonceKey = {
      network: verified.requirement.network.caip2,
      asset: verified.requirement.asset,
      payer: verified.payer,
      nonce: verified.authorization.nonce,
    };
    const expiry = reservationExpiryMs(BigInt(verified.authorization.validBefore));
    let reserved: boolean;
    try {
      reserved = await this.#options.nonces.reserve(nonce, expiry);
    } catch {
      // Without the ledger a replay cannot be ruled out: refuse rather than risk one.
      return refuse(
        accessRefusal("nonce_ledger_unavailable", {}, { "retry-after": "1" }),
        "unavailable",
      );
    }
    if (!reserved) {
      const spent = this.challenge(route, sale, "nonce_already_used");
      return refuse(spent, "replayed", verified.payer);
    }
    const facilitator = this.#options.facilitator;
    if (facilitator === null) {
      await this.#release(nonce);
      return refuse(accessRefusal("payments_unavailable"), "unavailable");
    }
    const outcome = await facilitator.verify(facilitatorRequest(verified));
    if (outcome.status !== "valid") {
      // Nothing was settled, so the authorization may still be used.
      await this.#release(nonce);
      if (outcome.status === "declined") {
        return refuse(this.#declined(route, sale, outcome.reason), "declined", verified.payer);
      }
      return refuse(accessRefusal(outcome.code), "failed");
    }
    return { ok: true, pending: { verified, nonce, route } };
  }

  /** The handler did not succeed: nothing is settled and the authorization stays usable. */
  async abandon(pending: PendingPayment): Promise<void> {
    this.#options.onOutcome?.("abandoned");
    await this.#release(pending.nonce);
  }

  /**
   * Frees a reservation that no settlement used. If the ledger cannot be reached the nonce
   * stays reserved until it expires: the payer signs a new authorization, nothing is lost.
   */
  async #release(nonce: NonceKey): Promise<void> {
    try {
      await this.#options.nonces.release(nonce);
    } catch {
      // Deliberately conservative; see above.
    }
  }

  /**
   * Settles a held response. On success adds the receipt header (and, for a pass sale, the
   * pass token) and tells `onSettled`; otherwise answers for the response: 402 when the
   * facilitator declined, 502 when its answer is unknown (the payment may or may not have
   * happened, so it is not offered again as if it had not). `call` is what was paid for over
   * MCP (the JSON-RPC method and tool), which the receipt records.
   */
  async settle(
    request: FastifyRequest,
    reply: FastifyReply,
    pending: PendingPayment,
    sale: Sale,
    call: SettlementCall | null = null,
  ): Promise<AccessRefusal | null> {
    const facilitator = this.#options.facilitator;
    const record = (outcome: PaymentOutcome) => this.#options.onOutcome?.(outcome);
    if (facilitator === null) {
      record("unavailable");
      return accessRefusal("payments_unavailable");
    }
    const { payment, requirement, payer } = pending.verified;
    const userAgent = request.headers["user-agent"];
    const intended: IntendedSettlement = {
      network: requirement.network.caip2,
      asset: requirement.asset,
      amount: requirement.amount.toString(),
      payTo: requirement.payTo,
      path: pending.route,
      // Our own path always knows the User-Agent: none sent is `""` (family `none`); null
      // would mean "not known", which only other producers may say.
      ua: typeof userAgent === "string" ? userAgent : "",
      ...call,
    };
    const settleRequest = facilitatorRequest(pending.verified);
    const intents = this.#options.intents ?? null;
    let intent: string | null = null;
    if (intents !== null) {
      try {
        intent = await intents.begin(
          settleRequest,
          intended,
          pending.verified.authorization.validBefore,
        );
      } catch {
        // Settling without a durable intent could lose the payment in a crash: refuse first.
        record("unavailable");
        return accessRefusal("payments_unavailable");
      }
    }
    const outcome = await facilitator.settle(settleRequest);
    if (outcome.status === "declined") {
      if (intent !== null) await intents?.end(intent, true);
      record("declined");
      return this.#declined(pending.route, sale, outcome.reason);
    }
    if (outcome.status === "unknown") {
      // It may have settled: the intent stays and is reconciled with the facilitator.
      if (intent !== null) await intents?.end(intent, false);
      record("failed");
      return accessRefusal(outcome.code);
    }

    const header = encodeSettlementResponse(payment.x402Version, requirement.network, {
      success: true,
      transaction: outcome.transaction,
      payer,
      amount: requirement.amount,
    });
    reply.header(header.name, header.value);
    if (requirement.kind === "lease" || requirement.kind === "day") {
      reply.header(
        PASS_TOKEN_HEADER,
        this.#passToken(pending, requirement.kind, outcome.transaction),
      );
    }
    // Before the response names the transaction, its receipt job must survive a crash.
    await this.#options.onSettled({ tx: outcome.transaction, ...intended });
    if (intent !== null) await intents?.end(intent, true);
    record("settled");
    return null;
  }

  #passToken(pending: PendingPayment, kind: PassKind, tx: string): string {
    const { settings } = this.#options;
    return issuePassToken(this.#options.signer(), {
      kind,
      scope: pending.route,
      payer: pending.verified.payer,
      network: pending.verified.requirement.network.caip2,
      tx,
      lifetimeSeconds: kind === "lease" ? settings.leaseSeconds : settings.dayPassSeconds,
      now: this.#options.clock,
    }).token;
  }
}
