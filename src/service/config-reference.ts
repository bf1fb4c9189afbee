/**
 * Every environment variable receiptd reads, in one table: the single source of `serve --help`,
 * `worker --help`, `docs/configuration.md` and `.env.example` (`npm run docs:config` writes the
 * two files). `test/service/config-reference.test.ts` fails when code under `src/` or `queues/`
 * reads a variable that is not listed here, or when the committed files differ from what this
 * module renders, so the reference cannot fall behind the code.
 *
 * Defaults come from the constants `config.ts` uses wherever one exists, so a changed default
 * changes the documentation with it.
 */
import {
  DEFAULT_CONNECTION_SHARES,
  DEFAULT_EVALUATION_KEYS,
  DEFAULT_HTTP_TIMEOUTS,
  DEFAULT_LIMITS,
  DEFAULT_METRICS_MAX_CONNECTIONS,
  DEFAULT_QUEUE_BUDGET,
  DEFAULT_SETTINGS,
  DEFAULT_SHUTDOWN_DRAIN_MS,
  DEFAULT_STORE_MIN_FREE_BYTES,
  DEFAULT_TASK_DEADLINE_MS,
  DEFAULT_TRACE_PROTOCOL,
  DEFAULT_TRACE_SERVICE_NAME,
  DEFAULT_WORKER_SETTINGS,
} from "./config.js";

/** The programs that read a variable. `cli` is the operator commands (`receiptd keys`, …). */
export type ConfigProcess = "serve" | "worker" | "cli" | "dev:facilitator";

export type ConfigGroup =
  | "Server"
  | "Files and identity"
  | "Distributed mode"
  | "Access and limits"
  | "Evaluation keys"
  | "Payments (x402)"
  | "Connections"
  | "Verification threads"
  | "Worker"
  | "Metrics"
  | "Traces"
  | "Development";

export interface ConfigVariable {
  readonly name: string;
  readonly group: ConfigGroup;
  /** The value in force when the variable is unset or empty, as operators read it. */
  readonly default: string;
  readonly meaning: string;
  readonly processes: readonly ConfigProcess[];
  /**
   * The value `.env.example` shows; the default (commented out) when absent. Never a real
   * secret: examples are placeholders.
   */
  readonly example?: string;
}

const ALL: readonly ConfigProcess[] = ["serve", "worker", "cli"];
const SERVE: readonly ConfigProcess[] = ["serve"];
const WORKER: readonly ConfigProcess[] = ["worker"];
const NONE = "unset";

export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  // Server
  {
    name: "HOST",
    group: "Server",
    default: DEFAULT_SETTINGS.host,
    meaning: "Address to listen on (`serve --host` overrides it); `0.0.0.0` for all interfaces.",
    processes: SERVE,
  },
  {
    name: "PORT",
    group: "Server",
    default: String(DEFAULT_SETTINGS.port),
    meaning: "Port to listen on (`serve --port` overrides it); 0 picks a free one.",
    processes: SERVE,
  },
  {
    name: "PUBLIC_BASE_URL",
    group: "Server",
    default: "http://HOST:PORT",
    meaning:
      "The service's public origin: names resources in x402 challenges and is the browser origin `POST /mcp` accepts. Never taken from a request's Host header.",
    processes: SERVE,
    example: "https://receiptd.example.com",
  },
  {
    name: "LOG_LEVEL",
    group: "Server",
    default: DEFAULT_SETTINGS.logLevel,
    meaning:
      "fatal, error, warn, info, debug, trace or silent. JSON lines, one format in every process.",
    processes: ["serve", "worker"],
  },
  {
    name: "MCP_ALLOWED_ORIGINS",
    group: "Server",
    default: NONE,
    meaning:
      "Comma-separated browser origins (`https://host[:port]`) besides PUBLIC_BASE_URL's that may call `POST /mcp`.",
    processes: SERVE,
    example: "https://app.example.com",
  },
  {
    name: "CORPUS_DIR",
    group: "Server",
    default: "unset (no referee)",
    meaning:
      "The conformance corpus (laid out like `../shared/corpus`): enables `POST /conformance`; the default corpus of `receiptd conformance run`.",
    processes: ["serve", "cli"],
    example: "../shared/corpus",
  },
  // Files and identity
  {
    name: "DATA_DIR",
    group: "Files and identity",
    default: "./data",
    meaning:
      "The service's identity files (`service-key.pem`, `validator-key.hex`, `internal.token`), `server.json` of the running server, and in embedded mode the document store (`store/`) and audit files. Every process of a deployment needs the same identity files.",
    processes: ALL,
  },
  {
    name: "AUDIT_DIR",
    group: "Files and identity",
    default: "DATA_DIR/audit",
    meaning:
      "Per-day audit files (one content-free line per call); `receiptd billing` reads them. Closed days are compressed to `YYYY-MM-DD.jsonl.gz` (every hour by each web process, or `receiptd audit compact`).",
    processes: ["serve", "cli"],
    example: "./data/audit",
  },
  {
    name: "AUDIT_RETENTION_DAYS",
    group: "Files and identity",
    default: String(DEFAULT_SETTINGS.auditRetentionDays),
    meaning:
      "Days of audit files kept: older days are removed by the web processes' hourly compaction and by `receiptd audit compact`. The default keeps the previous month whole until the next one ends, for `receiptd billing`. 0: never remove.",
    processes: ["serve", "cli"],
  },
  {
    name: "INTERNAL_TOKEN_FILE",
    group: "Files and identity",
    default: "DATA_DIR/internal.token",
    meaning: "The token `POST /payment-receipts` demands (created 0600 on first start).",
    processes: SERVE,
    example: "./data/internal.token",
  },
  // Distributed mode
  {
    name: "REDIS_URL",
    group: "Distributed mode",
    default: "unset (embedded: memory)",
    meaning:
      "redis:// or rediss:// URL: daily caps, the digest cache, the x402 nonce ledger and the `anchors` / `settlements` queues move to Redis. Required by `receiptd worker` unless REDIS_CLUSTER_NODES is set. Never logged.",
    processes: ALL,
    example: "redis://127.0.0.1:6379",
  },
  {
    name: "REDIS_CLUSTER_NODES",
    group: "Distributed mode",
    default: "unset (one Redis: REDIS_URL)",
    meaning:
      "Comma-separated `host:port` seeds of a Redis Cluster: the stores and the queues use ioredis' cluster client, every key carrying a hash tag. Selects distributed mode on its own; with REDIS_URL as well, that URL's user, password and rediss:// (TLS) apply to every node and its host is one more seed.",
    processes: ALL,
    example: "10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379",
  },
  {
    name: "REDIS_PREFIX",
    group: "Distributed mode",
    default: DEFAULT_SETTINGS.redisPrefix,
    meaning:
      "Prefix of every Redis key and BullMQ queue, so deployments can share one Redis. No `{` or `}` (they would become every key's cluster hash tag).",
    processes: ALL,
  },
  {
    name: "QUEUE_BUDGET_BYTES",
    group: "Distributed mode",
    default: String(DEFAULT_QUEUE_BUDGET.budgetBytes),
    meaning:
      "Payload bytes each queue (`anchors`, `settlements`) may hold in Redis, waiting or running, across all web processes; past it, writes get `503 queue_full` with Retry-After before anything is enqueued. Released when a job completes or fails for good; `receiptd worker` recomputes it at start and every minute.",
    processes: SERVE,
  },
  {
    name: "QUEUE_SHARE_PERCENT",
    group: "Distributed mode",
    default: String(DEFAULT_QUEUE_BUDGET.sharePercent),
    meaning:
      "The part of `QUEUE_BUDGET_BYTES` (1–100) one principal's queued jobs may hold; past it that principal gets `503 queue_full` while others still write. 100: no share, the budget alone.",
    processes: SERVE,
  },
  {
    name: "DATABASE_URL",
    group: "Distributed mode",
    default: "unset (embedded: files)",
    meaning:
      "postgres:// URL: the document store (API keys, anchors, revocation documents, settlement receipts, crystals) moves to PostgreSQL; migrations run at start. Never logged. The role and database: docs/operations.md.",
    processes: ALL,
    example: "postgres://receiptd:change-me@127.0.0.1:5432/receiptd",
  },
  {
    name: "DATABASE_SCHEMA",
    group: "Distributed mode",
    default: DEFAULT_SETTINGS.databaseSchema,
    meaning: "The PostgreSQL schema holding the store's tables.",
    processes: ALL,
  },
  {
    name: "STORE_MIN_FREE_BYTES",
    group: "Files and identity",
    default: String(DEFAULT_STORE_MIN_FREE_BYTES),
    meaning:
      "Embedded mode: free bytes under DATA_DIR/store below which /health and the metrics report low_space.",
    processes: SERVE,
  },
  // Access and limits
  {
    name: "ANON_DAILY_CAP",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anonymousDailyCap),
    meaning:
      "Keyless calls (reads, metadata, MCP discovery) per day, shared by all anonymous callers: the backstop behind the per-address shares.",
    processes: SERVE,
  },
  {
    name: "ANON_ADDRESS_DAILY_CAP",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anonymousAddressDailyCap),
    meaning:
      "Keyless calls per day of one client address (IPv6: one /64), out of `ANON_DAILY_CAP`; then `429 daily_cap_reached` for that address only. Behind a proxy it needs `TRUST_PROXY`, or every client is the proxy's one address.",
    processes: SERVE,
  },
  {
    name: "ANON_NETWORK_DAILY_CAP",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anonymousNetworkDailyCap),
    meaning:
      "Keyless calls per day of one network (IPv4 /24, IPv6 /48), all its addresses together, out of `ANON_DAILY_CAP`; then `429 daily_cap_reached` for that network only.",
    processes: SERVE,
  },
  {
    name: "ANON_NEW_CLIENT_RESERVE_PERCENT",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anonymousNewClientReservePercent),
    meaning:
      "The last calls of `ANON_DAILY_CAP`, in percent of it (rounded down, at most 50), that only an address's first 3 keyless calls of the day may take (an evaluation-key challenge, the key, one retry): other calls are refused once the rest is spent. 0: no reserve.",
    processes: SERVE,
  },
  {
    name: "KEY_DAILY_CAP",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.keyDailyCap),
    meaning: "Calls per day of an API key created without `--cap`.",
    processes: ["serve", "cli"],
  },
  {
    name: "X402_DAILY_CAP",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.x402PayerDailyCap),
    meaning: "Paid calls per day of one payer address.",
    processes: SERVE,
  },
  {
    name: "X402_SIGNATURE_CHECKS_PER_ADDRESS",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.x402SignatureChecksPerAddress),
    meaning:
      "x402 payment signatures one client address (IPv6: one /64) may have recovered per second, in bursts of up to twice as many; beyond it `429 payment_rate_limited` before any hashing. Payments that fail the cheap checks (amount, payTo, network, asset, window) never count. Distributed mode: one budget per address across every web process (in Redis; per process while Redis is down).",
    processes: SERVE,
  },
  {
    name: "X402_SIGNATURE_CHECKS_PER_SECOND",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.x402SignatureChecksPerSecond),
    meaning:
      "x402 payment signatures this process recovers per second, all clients together (about 2 ms of main-thread CPU each); beyond it `503 overloaded`.",
    processes: SERVE,
  },
  {
    name: "MAX_BODY_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.maxBodyBytes),
    meaning: "Largest request body of every JSON endpoint except `POST /crystals`; above it, 413.",
    processes: SERVE,
  },
  {
    name: "ANONYMOUS_BODY_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.maxAnonymousBodyBytes),
    meaning:
      "Largest body of a request without a key, pass or payment (`POST /mcp` discovery, `POST /keys/evaluation`); above it, 413 before the body is read.",
    processes: SERVE,
  },
  {
    name: "CRYSTAL_UPLOADS_PER_KEY",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.maxCrystalUploadsPerKey),
    meaning:
      "`POST /crystals` bodies one key (or payer) may send at once; more get `429 too_many_uploads`. Distributed mode: across every web process (in Redis; per process while Redis is down).",
    processes: SERVE,
  },
  {
    name: "CRYSTAL_TENANT_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.crystalTenantQuotaBytes),
    meaning:
      "Stored bytes of crystals (envelopes and lineage summaries) one tenant may hold; past it `POST /crystals` answers `403 crystal_quota_exceeded`.",
    processes: SERVE,
  },
  {
    name: "CRYSTAL_KEY_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.crystalPrincipalQuotaBytes),
    meaning:
      "Stored bytes of crystals one principal (API key, evaluation key, x402 payer) may hold across the tenants it owns; then `403 crystal_quota_exceeded`.",
    processes: SERVE,
  },
  {
    name: "ANCHOR_KEY_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anchorPrincipalQuotaBytes),
    meaning:
      "Stored bytes one principal (API key, x402 payer) may have `POST /anchors` write: each accepted submission is charged the size of the document it stores (the proof in base64 and its attestations); past it `403 anchor_quota_exceeded`. 0: no anchors.",
    processes: SERVE,
  },
  {
    name: "ANCHOR_EVALUATION_KEY_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.anchorEvaluationQuotaBytes),
    meaning:
      "`ANCHOR_KEY_QUOTA_BYTES` for a self-served evaluation key: smaller, since a free key tries the service and anchors are kept forever. 0: no anchors for evaluation keys.",
    processes: SERVE,
  },
  {
    name: "CRYSTAL_TTL_DAYS",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.crystalTtlDays),
    meaning:
      "Whole days a crystal is kept after the service first stored it; `receiptd crystals expire` (run it daily) then removes it, its lineage entry and its quota bytes, once no younger crystal descends from it. 0: never.",
    processes: ["serve", "cli"],
  },
  {
    name: "NOTARIZATION_KEY_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.notarizationPrincipalQuotaBytes),
    meaning:
      "Stored notarization bytes one API key or x402 payer may hold, charged per new statement and given back when it expires; past it `403 notarization_quota_exceeded`. 0: no notarizations.",
    processes: SERVE,
  },
  {
    name: "NOTARIZATION_EVALUATION_KEY_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.notarizationEvaluationKeyQuotaBytes),
    meaning: "The same quota for one evaluation key, smaller than a key's.",
    processes: SERVE,
  },
  {
    name: "NOTARIZATION_EVALUATION_QUOTA_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.notarizationEvaluationQuotaBytes),
    meaning:
      "Stored notarization bytes all evaluation keys together may hold (the free tier is one tenant); past it `403 notarization_quota_exceeded` for every evaluation key until statements expire.",
    processes: SERVE,
  },
  {
    name: "NOTARIZATION_TTL_DAYS",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.notarizationTtlDays),
    meaning:
      "Whole days a notarization is kept after the service stored it; `receiptd notarization expire` (run it daily) then removes it and gives its bytes back to its owner's quota. 0: never.",
    processes: ["serve", "cli"],
  },
  {
    name: "MAX_BATCH",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.maxBatch),
    meaning: "Bundles in one `POST /verify` batch.",
    processes: SERVE,
  },
  {
    name: "MAX_RESULT_BYTES",
    group: "Access and limits",
    default: String(DEFAULT_LIMITS.maxResultBytes),
    meaning:
      "Bytes of errors and reasons one request's verdicts may hold; above it, `400 result_too_large`.",
    processes: SERVE,
  },
  {
    name: "TRUST_PROXY",
    group: "Access and limits",
    default: "unset (the socket's peer is the client)",
    meaning:
      "The proxies whose `X-Forwarded-For` names the client's address: a comma-separated list of addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`; the client is the nearest address in the header that is not one of them. Set it behind a balancer or reverse proxy: the per-address shares (anonymous calls, evaluation keys, x402 signature checks) count by client address, and unset behind a proxy every client is the proxy's one address (docs/operations.md, \"Behind a load balancer\"). Never wider than the proxies: a trusted range lets its clients pick their address. Also lets those proxies' `X-Forwarded-Proto`/`-Host` name the origin of the MCP server card.",
    processes: SERVE,
    example: "10.0.0.0/8",
  },
  // Evaluation keys
  {
    name: "EVALUATION_KEYS",
    group: "Evaluation keys",
    default: "on",
    meaning:
      "`on` or `off`: self-served evaluation keys (`GET /keys/evaluation/challenge`, `POST /keys/evaluation`). Off, both answer `404 evaluation_keys_disabled` and `/info` shows `evaluation_keys: null`.",
    processes: SERVE,
  },
  {
    name: "EVALUATION_KEY_DAILY_CAP",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.keyDailyCap),
    meaning: "Calls per UTC day of one evaluation key (fixed in the key when it is issued).",
    processes: SERVE,
  },
  {
    name: "EVALUATION_KEY_TTL_HOURS",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.ttlHours),
    meaning:
      "How long an evaluation key works after its issuance (1–2160); then `401 key_expired`.",
    processes: SERVE,
  },
  {
    name: "EVALUATION_KEYS_PER_ADDRESS",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.perAddressDaily),
    meaning:
      "Evaluation keys one client address may obtain per UTC day (IPv6: per /64); then `429 evaluation_limit_reached`.",
    processes: SERVE,
  },
  {
    name: "EVALUATION_KEYS_PER_NETWORK",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.perNetworkDaily),
    meaning:
      "Evaluation keys the addresses of one network (IPv4 /24, IPv6 /48) may obtain together per UTC day; then `429 evaluation_limit_reached`.",
    processes: SERVE,
  },
  {
    name: "EVALUATION_KEYS_PER_DAY",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.perDay),
    meaning:
      "Evaluation keys issued per UTC day, all clients together; then `429 evaluation_keys_exhausted`.",
    processes: SERVE,
  },
  {
    name: "EVALUATION_POW_BITS",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.powBits),
    meaning:
      "Difficulty of the proof of work (0–32): leading zero bits of SHA-256(challenge ‖ nonce); each bit doubles the client's work (16: about 65,000 hashes on average, around half a second of JavaScript SHA-256 on a laptop). The day's first challenges; later ones are harder (`EVALUATION_POW_RAMP_BITS`).",
    processes: SERVE,
  },
  {
    name: "EVALUATION_POW_RAMP_BITS",
    group: "Evaluation keys",
    default: String(DEFAULT_EVALUATION_KEYS.powRampBits),
    meaning:
      "Bits the difficulty rises by as the day's issuance fills: a challenge asks `EVALUATION_POW_BITS + floor(ramp × issued today / EVALUATION_KEYS_PER_DAY)` bits (at most 32), and says so. 0 keeps it fixed.",
    processes: SERVE,
  },
  // Payments
  {
    name: "X402_PAY_TO",
    group: "Payments (x402)",
    default: "unset (payments off)",
    meaning: "The address paid; setting it turns x402 payments on.",
    processes: SERVE,
    example: "0x0000000000000000000000000000000000000000",
  },
  {
    name: "FACILITATOR_URL",
    group: "Payments (x402)",
    default: "unset (payments refused)",
    meaning:
      "The x402 facilitator that verifies and settles payments; without it payments are offered but refused. `npm run dev:facilitator` runs a local stand-in.",
    processes: SERVE,
    example: "http://127.0.0.1:4021",
  },
  {
    name: "X402_NETWORK",
    group: "Payments (x402)",
    default: "eip155:8453",
    meaning: "The network offered, CAIP-2 (`eip155:84532`) or x402 v1 name (`base-sepolia`).",
    processes: SERVE,
  },
  {
    name: "X402_ASSET",
    group: "Payments (x402)",
    default: "the network's USDC",
    meaning: "The EIP-3009 token contract paid in.",
    processes: SERVE,
  },
  {
    name: "X402_PRICE_CALL_USD",
    group: "Payments (x402)",
    default: DEFAULT_SETTINGS.x402Prices.call,
    meaning: "Price of one paid call.",
    processes: SERVE,
  },
  {
    name: "X402_PRICE_LEASE_USD",
    group: "Payments (x402)",
    default: DEFAULT_SETTINGS.x402Prices.lease,
    meaning: "Price of a 5-minute lease (ERC-8004 validation, crystal writes).",
    processes: SERVE,
  },
  {
    name: "X402_PRICE_DAY_USD",
    group: "Payments (x402)",
    default: DEFAULT_SETTINGS.x402Prices.day,
    meaning: "Price of a 24-hour day pass.",
    processes: SERVE,
  },
  // Connections
  {
    name: "HEADERS_TIMEOUT_MS",
    group: "Connections",
    default: String(DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs),
    meaning: "The request line and headers must arrive within it, else 408.",
    processes: SERVE,
  },
  {
    name: "REQUEST_TIMEOUT_MS",
    group: "Connections",
    default: String(DEFAULT_HTTP_TIMEOUTS.requestTimeoutMs),
    meaning: "The whole request, body included, must arrive within it, else 408.",
    processes: SERVE,
  },
  {
    name: "IDLE_TIMEOUT_MS",
    group: "Connections",
    default: String(DEFAULT_HTTP_TIMEOUTS.idleTimeoutMs),
    meaning: "A socket on which nothing moved while the client was to act is closed after it.",
    processes: SERVE,
  },
  {
    name: "KEEP_ALIVE_TIMEOUT_MS",
    group: "Connections",
    default: String(DEFAULT_HTTP_TIMEOUTS.keepAliveTimeoutMs),
    meaning:
      "Idle keep-alive connections are closed after it; keep the load balancer's idle timeout below it.",
    processes: SERVE,
  },
  {
    name: "MAX_CONNECTIONS",
    group: "Connections",
    default: "4096, or less under a smaller open-file limit",
    meaning: "Connections served normally; beyond them new ones get `503 too_many_connections`.",
    processes: SERVE,
  },
  {
    name: "HEALTH_RESERVE_CONNECTIONS",
    group: "Connections",
    default: "16",
    meaning:
      "Connections beyond MAX_CONNECTIONS admitted for one `GET /health` each; one client address takes at most a quarter of them.",
    processes: SERVE,
  },
  {
    name: "MAX_CONNECTIONS_PER_ADDRESS",
    group: "Connections",
    default: "MAX_CONNECTIONS / 4",
    meaning:
      "Connections one client address (IPv4 address, IPv6 /64) may hold; past it, its own idle connections are closed to make room, else it gets only `/health`. Addresses in TRUST_PROXY have no share of their own.",
    processes: SERVE,
  },
  {
    name: "MIN_READ_BYTES_PER_SECOND",
    group: "Connections",
    default: String(DEFAULT_CONNECTION_SHARES.minReadBytesPerSecond),
    meaning:
      "A client that reads its answers slower than this (over each IDLE_TIMEOUT_MS) is closed; 0 turns the check off.",
    processes: SERVE,
  },
  {
    name: "MEMORY_BUDGET_BYTES",
    group: "Connections",
    default: String(DEFAULT_CONNECTION_SHARES.memoryBudgetBytes),
    meaning:
      "Request bodies being received (at their declared length) and answers not yet written, across the process; past it, new requests get `503 memory_budget_exceeded` before their body is read.",
    processes: SERVE,
  },
  {
    name: "MEMORY_SHARE_PERCENT",
    group: "Connections",
    default: String(DEFAULT_CONNECTION_SHARES.memorySharePercent),
    meaning:
      "The part of `MEMORY_BUDGET_BYTES` (1–100) one principal's requests may hold at once: an API key, an evaluation key, an x402 payer, an anonymous address (IPv6: its /64). Past it that principal gets `503 memory_budget_exceeded` while others are still admitted. 100: no share, the budget alone.",
    processes: SERVE,
  },
  // Threads
  {
    name: "CPU_THREADS",
    group: "Verification threads",
    default: "the number of cores",
    meaning: "Worker threads verifying bundles (a fixed pool).",
    processes: SERVE,
  },
  {
    name: "CPU_MAX_QUEUE",
    group: "Verification threads",
    default: "32 × CPU_THREADS",
    meaning:
      'Tasks allowed to wait for a thread, all principals together; beyond it, `503 overloaded` with `Retry-After: 1`. When it is full, a principal with a shorter queue pushes out the newest task of the longest one (docs/service-decisions.md, "A fair CPU pool").',
    processes: SERVE,
  },
  {
    name: "CPU_MAX_QUEUE_PER_PRINCIPAL",
    group: "Verification threads",
    default: "CPU_MAX_QUEUE",
    meaning:
      "Tasks one principal (API key, evaluation key, x402 payer, anonymous address) may have waiting for a thread; beyond it, `503 overloaded`. The default leaves the sharing to the push-out, so a principal alone may use the whole queue.",
    processes: SERVE,
  },
  {
    name: "CPU_TASK_DEADLINE_MS",
    group: "Verification threads",
    default: String(DEFAULT_TASK_DEADLINE_MS),
    meaning:
      "The longest one request's CPU task may take, waiting for a thread included; then its thread is terminated and replaced and the request answered `503 work_limit_exceeded` (`limit`; `limits.cpu_task_deadline_ms` in `GET /info`). A task whose client closed its connection is abandoned the same way.",
    processes: SERVE,
  },
  {
    name: "SHUTDOWN_DRAIN_MS",
    group: "Verification threads",
    default: String(DEFAULT_SHUTDOWN_DRAIN_MS),
    meaning:
      "After SIGTERM or SIGINT, how long requests in flight may still finish; then their CPU tasks are terminated and the process exits.",
    processes: SERVE,
  },
  // Worker
  {
    name: "WORKER_CONCURRENCY",
    group: "Worker",
    default: String(DEFAULT_WORKER_SETTINGS.concurrency),
    meaning: "Jobs per queue one worker process runs at once.",
    processes: WORKER,
  },
  {
    name: "WORKER_LOCK_DURATION_MS",
    group: "Worker",
    default: String(DEFAULT_WORKER_SETTINGS.lockDurationMs),
    meaning:
      "A job's lock; a crashed worker's jobs are taken over within about this plus the next.",
    processes: WORKER,
  },
  {
    name: "WORKER_STALLED_INTERVAL_MS",
    group: "Worker",
    default: String(DEFAULT_WORKER_SETTINGS.stalledIntervalMs),
    meaning: "How often a worker looks for jobs whose lock expired.",
    processes: WORKER,
  },
  {
    name: "WORKER_SHUTDOWN_MS",
    group: "Worker",
    default: String(DEFAULT_WORKER_SETTINGS.shutdownMs),
    meaning:
      "On SIGTERM, how long active jobs may take to finish before they are abandoned (and rerun elsewhere).",
    processes: WORKER,
  },
  // Development
  {
    name: "RECEIPTD_URL",
    group: "Development",
    default: NONE,
    meaning:
      "The running server's URL, for `receiptd keys create`: it compares the issuer in that server's `GET /info` with DATA_DIR's service key and warns when they differ.",
    processes: ["cli"],
    example: "http://127.0.0.1:8080",
  },
  {
    name: "FACILITATOR_PEER_HOST",
    group: "Development",
    default: "127.0.0.1",
    meaning: "Address of `npm run dev:facilitator` (a local stand-in: no chain, no money).",
    processes: ["dev:facilitator"],
  },
  {
    name: "VERIFICATION_PAGE",
    group: "Server",
    default: "on",
    meaning:
      "`on` or `off`: the verification page (`GET /` and `/assets/…`, docs/web-page.md), which verifies in the browser and sends nothing. Off, those routes answer `404 not_found`; the API is unchanged.",
    processes: SERVE,
  },
  {
    name: "CORS_ORIGINS",
    group: "Server",
    default: "(empty: CORS off)",
    meaning:
      "Browser origins allowed to call the API: a comma-separated list of exact origins, or `*` alone. Preflights need no key and are not counted; credentials mode is never offered (keys travel in headers).",
    processes: SERVE,
    example: "https://app.example.com",
  },
  {
    name: "CORS_MAX_AGE_SECONDS",
    group: "Server",
    default: String(DEFAULT_SETTINGS.corsMaxAgeSeconds),
    meaning: "How long a browser may cache a preflight answer (0–86400).",
    processes: SERVE,
  },
  {
    name: "METRICS_PORT",
    group: "Metrics",
    default: "(unset: no /metrics)",
    meaning:
      "Port of the web process's own Prometheus listener (`/metrics`), never the API port; `0` picks a free port.",
    processes: SERVE,
    example: "9464",
  },
  {
    name: "WORKER_METRICS_PORT",
    group: "Metrics",
    default: "(unset: no /metrics)",
    meaning:
      "The same for `receiptd worker`: its own variable so one environment can serve both processes.",
    processes: WORKER,
    example: "9465",
  },
  {
    name: "METRICS_HOST",
    group: "Metrics",
    default: DEFAULT_SETTINGS.metricsHost,
    meaning:
      "Address the metrics listeners bind; anything but loopback needs `METRICS_TOKEN` (startup stops otherwise).",
    processes: ["serve", "worker"],
  },
  {
    name: "METRICS_TOKEN",
    group: "Metrics",
    default: "(unset: no token)",
    meaning:
      "When set, a scrape must send `Authorization: Bearer <token>` (16 or more printable characters).",
    processes: ["serve", "worker"],
    example: "<a long random token>",
  },
  {
    name: "METRICS_MAX_CONNECTIONS",
    group: "Metrics",
    default: String(DEFAULT_METRICS_MAX_CONNECTIONS),
    meaning:
      "Connections the metrics listener holds at once (more are closed as they arrive); it closes silent connections after 5 s and refused scrapes at once.",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_EXPORTER_OTLP_ENDPOINT",
    group: "Traces",
    default: "(unset: no traces, nothing of OpenTelemetry loaded)",
    meaning:
      'Base URL of an OTLP/HTTP collector: spans are POSTed to `<url>/v1/traces`. Setting it turns tracing on (docs/operations.md "Traces").',
    processes: ["serve", "worker"],
    example: "http://127.0.0.1:4318",
  },
  {
    name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    group: "Traces",
    default: "(unset: from OTEL_EXPORTER_OTLP_ENDPOINT)",
    meaning: "The traces URL itself, used as is; turns tracing on too, and wins over the base.",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_EXPORTER_OTLP_PROTOCOL",
    group: "Traces",
    default: DEFAULT_TRACE_PROTOCOL,
    meaning:
      "`http/protobuf` or `http/json` (no gRPC); `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` wins when set.",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    group: "Traces",
    default: "(unset: OTEL_EXPORTER_OTLP_PROTOCOL)",
    meaning: "The protocol for traces only.",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_SERVICE_NAME",
    group: "Traces",
    default: DEFAULT_TRACE_SERVICE_NAME,
    meaning:
      "`service.name` of every span; web and worker processes share it and differ by `service.instance.id`, `process.pid` and `receiptd.process`.",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_RESOURCE_ATTRIBUTES",
    group: "Traces",
    default: NONE,
    meaning: "More resource attributes, `key=value,…` (values percent-encoded), on every span.",
    processes: ["serve", "worker"],
    example: "deployment.environment.name=production",
  },
  {
    name: "OTEL_SDK_DISABLED",
    group: "Traces",
    default: "false",
    meaning:
      "`true` keeps tracing off whatever the endpoint (so does `OTEL_TRACES_EXPORTER=none`).",
    processes: ["serve", "worker"],
  },
  {
    name: "OTEL_TRACES_EXPORTER",
    group: "Traces",
    default: "otlp",
    meaning: "`none` keeps tracing off; anything else exports over OTLP/HTTP.",
    processes: ["serve", "worker"],
  },
  {
    name: "FACILITATOR_PEER_PORT",
    group: "Development",
    default: "4021",
    meaning: "Port of `npm run dev:facilitator`.",
    processes: ["dev:facilitator"],
  },
];

const GROUPS: readonly ConfigGroup[] = [
  "Server",
  "Files and identity",
  "Distributed mode",
  "Access and limits",
  "Evaluation keys",
  "Payments (x402)",
  "Connections",
  "Verification threads",
  "Worker",
  "Metrics",
  "Traces",
  "Development",
];

/** Plain text for `--help`: the variables a process reads, with their defaults. */
export function environmentHelp(process: ConfigProcess): string {
  const lines = ["Environment (docs/configuration.md has them all):"];
  const used = CONFIG_VARIABLES.filter((variable) => variable.processes.includes(process));
  const width = Math.max(...used.map((variable) => variable.name.length));
  for (const variable of used) {
    lines.push(`  ${variable.name.padEnd(width)}  ${variable.default}`);
  }
  return `${lines.join("\n")}\n`;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|");
}

/** `docs/configuration.md`. */
export function configurationMarkdown(): string {
  const out = [
    "# Configuration",
    "",
    "<!-- Generated by `npm run docs:config` from src/service/config-reference.ts; do not edit. -->",
    "",
    "receiptd is configured by environment variables only. Every variable any of its programs",
    "reads is listed here; `test/service/config-reference.test.ts` fails when the code reads one",
    "that is not, or when this page differs from the table it is generated from. An unset or",
    "empty variable takes its default; a value that is present but unusable stops the process",
    "with a one-line error (exit 2) rather than falling back to the default.",
    "",
    "Programs: `serve` (the HTTP service), `worker` (the queue consumer of distributed mode),",
    "`cli` (the operator commands: `receiptd keys`, `billing`, `rotate-key`, `revocations`,",
    "`conformance`), `dev:facilitator` (the local x402 facilitator stand-in).",
    "",
    "`.env.example` lists the same variables. receiptd does not read a `.env` file itself: load",
    "one with your process manager, with `set -a; . ./.env; set +a`, or with",
    "`node --env-file=.env dist/src/cli/receiptd.js serve`.",
    "",
  ];
  for (const group of GROUPS) {
    const variables = CONFIG_VARIABLES.filter((variable) => variable.group === group);
    if (variables.length === 0) continue;
    out.push(`## ${group}`, "", "| variable | default | read by | meaning |", "|---|---|---|---|");
    for (const variable of variables) {
      out.push(
        `| \`${variable.name}\` | ${cell(variable.default)} | ${variable.processes.join(", ")} | ${cell(variable.meaning)} |`,
      );
    }
    out.push("");
  }
  return out.join("\n");
}

/** Wraps `text` into `# `-prefixed comment lines of at most 100 characters. */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > 100 && line !== "#") {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

/** `.env.example`: every variable commented out, at its default or a placeholder. */
export function envExample(): string {
  const out = [
    ...comment(
      "receiptd configuration: every variable its programs read (docs/configuration.md explains them). Generated by `npm run docs:config`; do not edit. receiptd does not read this file itself: copy it to .env (git ignores .env), uncomment what you change, and load it with your process manager, `set -a; . ./.env; set +a` or `node --env-file=.env`. Never commit real secrets: the values below are defaults or placeholders.",
    ),
    "",
  ];
  for (const group of GROUPS) {
    const variables = CONFIG_VARIABLES.filter((variable) => variable.group === group);
    if (variables.length === 0) continue;
    out.push(`# --- ${group} ---`, "");
    for (const variable of variables) {
      out.push(...comment(`${variable.meaning} Default: ${variable.default}.`));
      const value = variable.example ?? (variable.default.includes(" ") ? "" : variable.default);
      out.push(`# ${variable.name}=${value}`, "");
    }
  }
  return out.join("\n");
}
