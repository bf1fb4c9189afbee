/** The `service` member of every answer that carries a verdict or a report (service.md §1). */
export const SERVICE_NAME = "continuity-receipt-verify";
