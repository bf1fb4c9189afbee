/** From a verdict to the attestation's `outcome` (service.md §5). */
import type { Verdict } from "../verifier/bundle/result.js";
import { OUTCOMES, type Outcome, type OutcomeLabel } from "./attestation.js";

const LABELS: Record<Verdict, OutcomeLabel> = {
  TRUSTED: "ACCEPT",
  UNTRUSTED: "REJECT",
  PROVISIONAL: "NEEDS_EVIDENCE",
  INSUFFICIENT_EVIDENCE: "NEEDS_EVIDENCE",
};

export interface OutcomeOf {
  outcome: Outcome;
  label: OutcomeLabel;
}

export function outcomeFor(verdict: Verdict): OutcomeOf {
  const label = LABELS[verdict];
  return { outcome: OUTCOMES[label], label };
}

/** The mapping as `/info` publishes it, by outcome value. */
export const OUTCOME_TABLE = [
  { outcome: OUTCOMES.REJECT, label: "REJECT", verdicts: ["UNTRUSTED"] },
  { outcome: OUTCOMES.ACCEPT, label: "ACCEPT", verdicts: ["TRUSTED"] },
  {
    outcome: OUTCOMES.NEEDS_EVIDENCE,
    label: "NEEDS_EVIDENCE",
    verdicts: ["PROVISIONAL", "INSUFFICIENT_EVIDENCE"],
  },
] as const;
