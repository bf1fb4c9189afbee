/**
 * Builds what the access plugin needs from the configuration: the key store over the shared
 * document store (so `receiptd keys` acts on what the server sees), the daily caps, the audit
 * log, — when `X402_PAY_TO` is set — the x402 gate with its nonce ledger and facilitator
 * client, and — unless `EVALUATION_KEYS=off` — the issuer of evaluation keys. Caps, nonces
 * and spent challenges come from the mode's backends (memory or Redis).
 */

import { KeyStore } from "../access/api-keys.js";
import { AuditLog } from "../access/audit.js";
import type { CapStore } from "../access/caps.js";
import type { ChallengeLedger } from "../access/evaluation/challenge-ledger.js";
import { ADDRESS_KEY_INFO, CHALLENGE_KEY_INFO } from "../access/evaluation/challenges.js";
import { addressCounter } from "../access/evaluation/client-address.js";
import { EvaluationKeys } from "../access/evaluation/issuer.js";
import type { PaymentOutcome } from "../metrics/metrics.js";
import { FacilitatorClient } from "../payments/facilitator-client.js";
import type { NonceLedger } from "../payments/nonce-ledger.js";
import {
  type IntentLog,
  SETTLEMENT_INTENTS_JOURNAL,
  SettlementIntents,
} from "../payments/settlement-intents.js";
import type { Settlement } from "../payments/settlement-receipt.js";
import type { SignatureChecks } from "../payments/signature-budget.js";
import type { DocumentStore } from "../storage/document-store.js";
import { JobJournal, journalDirectory } from "../storage/job-journal.js";
import type { ServiceConfig } from "./config.js";
import type { InternalToken } from "./internal-token.js";
import type { AccessServices } from "./plugins/access.js";
import { X402Gate } from "./plugins/x402.js";
import type { ServiceIdentity } from "./service-key.js";

export interface AccessServiceDependencies {
  documentStore: DocumentStore;
  /** Daily caps and the x402 nonce ledger of the mode (memory or Redis); owned by the caller. */
  caps: CapStore;
  nonces: NonceLedger;
  /** The x402 signature-check shares of the mode (per client across the deployment when distributed). */
  signatureChecks: SignatureChecks;
  /** Spent evaluation-key challenges (memory or Redis); owned by the caller. */
  challenges: ChallengeLedger;
  /** The deployment's shared secret, from which the challenges' keys are derived. */
  internalToken: InternalToken;
  identity: ServiceIdentity;
  clock: () => number;
  /** Told about every settled x402 payment; resolves once its receipt job is durable. */
  onSettled: (settlement: Settlement) => Promise<void>;
  /** Told how each presented x402 payment ended (`/metrics`). */
  onPayment?: (outcome: PaymentOutcome) => void;
  /** Told each time an x402 payment's signature is recovered (`/metrics`). */
  onSignatureCheck?: () => void;
  /** Where interrupted settlements are reported (settlement-intents.ts). */
  log: IntentLog;
}

export function createAccessServices(
  config: ServiceConfig,
  dependencies: AccessServiceDependencies,
): AccessServices & { start(): Promise<void>; close(): Promise<void> } {
  const { documentStore, caps, nonces, identity, clock } = dependencies;
  const { settings, facilitatorUrl, publicBaseUrl } = config.payments;
  // One key names every per-address counter: the anonymous shares, the evaluation keys', and
  // the x402 signature-check shares.
  const addressKey = dependencies.internalToken.deriveKey(ADDRESS_KEY_INFO);
  const facilitator =
    facilitatorUrl === null ? null : new FacilitatorClient({ url: facilitatorUrl });
  const intents =
    settings === null || facilitator === null
      ? null
      : new SettlementIntents({
          journal: new JobJournal(journalDirectory(config.dataDir, SETTLEMENT_INTENTS_JOURNAL)),
          facilitator,
          onSettled: dependencies.onSettled,
          log: dependencies.log,
          clock,
        });
  const payments =
    settings === null
      ? null
      : new X402Gate({
          settings,
          facilitator,
          nonces,
          publicBaseUrl,
          clock,
          signer: () => identity.signer(),
          onSettled: dependencies.onSettled,
          onOutcome: dependencies.onPayment,
          signatureBudget: dependencies.signatureChecks,
          clientOf: (request) => addressCounter(request.ip, addressKey) ?? "unknown",
          onSignatureCheck: dependencies.onSignatureCheck,
          ...(intents === null ? {} : { intents }),
        });
  const audit = new AuditLog(config.auditDir, {
    now: clock,
    retentionDays: config.auditRetentionDays,
    onCompaction: (report) => {
      if (report.compressed.length + report.removed.length + report.busy.length === 0) return;
      dependencies.log.info(
        {
          compressed: report.compressed,
          removed: report.removed,
          busy: report.busy,
          retention_days: report.retentionDays,
          audit_bytes: report.bytes,
        },
        "audit files compacted",
      );
    },
    onCompactionError: (error) =>
      dependencies.log.error(
        { error: error instanceof Error ? error.message : String(error) },
        "audit compaction failed",
      ),
  });
  const keys = new KeyStore(documentStore, {
    defaultDailyCap: config.limits.keyDailyCap,
    now: clock,
  });
  const evaluation =
    config.evaluationKeys === null
      ? null
      : new EvaluationKeys({
          terms: config.evaluationKeys,
          keys,
          caps,
          ledger: dependencies.challenges,
          challengeKey: dependencies.internalToken.deriveKey(CHALLENGE_KEY_INFO),
          addressKey,
          clock,
        });
  return {
    keys,
    caps,
    evaluation,
    payments,
    audit,
    limits: config.limits,
    addressKey,
    passIssuers: () => [identity.signer().did],
    clock,
    /**
     * Reconciles the settlements a crash interrupted (throws when the journal cannot open),
     * and starts the audit directory's hourly compaction (in the background).
     */
    async start() {
      await intents?.start();
      await audit.startHousekeeping();
    },
    async close() {
      await intents?.close();
      await audit.close();
      await facilitator?.close();
    },
  };
}
