/**
 * The MCP server card (service.md §7; protocols.md §3.4, a moving target): what a client can
 * know before connecting. One document carries the contract's members, the SEP-2127 members
 * (`title`, `remotes`) and the SEP-1649 ones (`serverInfo`, `protocolVersion`), all built
 * from the same definitions `initialize` and `tools/list` answer with.
 */
import {
  LATEST_PROTOCOL_VERSION,
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INSTRUCTIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "./protocol.js";
import { TOOLS } from "./tools.js";

export const MCP_PATH = "/mcp";

/** SEP-2127 bounds `description` to 100 characters. */
const DESCRIPTION =
  "Verifies Continuity Receipt bundles, anchor proofs and revocations; notarizes context digests";

const KEY_FORMAT = "svc_ followed by 48 hex digits";

/**
 * Who may call what. Payments (x402) are not listed: they are not offered yet, and a card
 * must not promise a way in that the service refuses.
 */
const AUTHENTICATION = [
  {
    type: "none",
    methods: ["initialize", "notifications/*", "ping", "tools/list"],
    description: "discovery is open, counted against the shared anonymous daily cap",
  },
  {
    type: "bearer",
    header: "Authorization",
    scheme: "Bearer",
    format: KEY_FORMAT,
    methods: ["tools/call"],
    description: "an API key issued by the operator",
  },
  {
    type: "api_key",
    header: "X-SVC-Key",
    format: KEY_FORMAT,
    methods: ["tools/call"],
    description: "the same API key, in a header of its own",
  },
];

/** The card for a service reached at `origin` (scheme, host and port, no path). */
export function serverCard(origin: string): object {
  return {
    name: SERVER_INFO.name,
    title: SERVER_INFO.title,
    version: SERVER_INFO.version,
    description: DESCRIPTION,
    protocolVersion: LATEST_PROTOCOL_VERSION,
    serverInfo: SERVER_INFO,
    transport: { type: "streamable-http", url: MCP_PATH },
    remotes: [
      {
        type: "streamable-http",
        url: `${origin}${MCP_PATH}`,
        supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
        headers: [
          {
            name: "Authorization",
            description: `Bearer <API key> (${KEY_FORMAT}); needed for tools/call`,
            isRequired: false,
            isSecret: true,
          },
        ],
      },
    ],
    capabilities: SERVER_CAPABILITIES,
    instructions: SERVER_INSTRUCTIONS,
    tools: TOOLS,
    authentication: AUTHENTICATION,
  };
}
