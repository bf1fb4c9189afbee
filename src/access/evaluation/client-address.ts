/**
 * Which counter a client address is counted against: per-address shares (evaluation keys, the
 * anonymous daily cap) and per-site ones (evaluation keys). An IPv4 address is one client; an
 * IPv6 client usually holds a whole /64 (SLAAC, privacy addresses: a new address is free), so
 * IPv6 addresses are counted per /64 prefix. A site or provider block is an IPv4 /24 or an
 * IPv6 /48. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, how a dual-stack socket reports
 * IPv4 peers) is its IPv4 address.
 *
 * The counter is named by an HMAC of that network under a key derived from the deployment's
 * secret, so neither Redis nor memory ever holds an address, and a name cannot be reversed
 * by trying the 2^32 IPv4 addresses without the key.
 */
import { createHmac } from "node:crypto";
import { isIPv4, isIPv6 } from "node:net";

/** How wide a network one counter covers: prefix lengths for IPv4 and IPv6. */
export interface NetworkWidth {
  ipv4Bits: number;
  ipv6Bits: number;
}

/** One client: an IPv4 address, an IPv6 /64 (what one subscriber is given). */
export const CLIENT: NetworkWidth = { ipv4Bits: 32, ipv6Bits: 64 };
/** One site or provider block: an IPv4 /24, an IPv6 /48 (what one site is usually given). */
export const SITE: NetworkWidth = { ipv4Bits: 24, ipv6Bits: 48 };

/**
 * The network of `address` at `width`, as text: `192.0.2.1` → `192.0.2.1` (a /32 is written
 * bare), `192.0.2.0/24`; `2001:db8:1:2:3:4:5:6` → `2001:db8:1:2::/64`; null if neither.
 */
export function addressNetwork(address: string, width: NetworkWidth = CLIENT): string | null {
  const v4 = ipv4Octets(address);
  if (v4 !== null) return ipv4Network(v4, width.ipv4Bits);
  const unscoped = address.split("%", 1)[0] ?? "";
  if (!isIPv6(unscoped)) return null;
  return ipv6Network(ipv6Groups(unscoped), width.ipv6Bits);
}

function ipv4Octets(address: string): number[] | null {
  if (isIPv4(address)) return address.split(".").map(Number);
  const unscoped = address.split("%", 1)[0] ?? "";
  if (!isIPv6(unscoped)) return null;
  const groups = ipv6Groups(unscoped);
  if (!(groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff)) return null;
  return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff];
}

function ipv4Network(octets: number[], bits: number): string {
  if (bits >= 32) return octets.join(".");
  const value = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const masked = bits === 0 ? 0 : value - (value % 2 ** (32 - bits));
  const bytes = [masked >>> 24, (masked >>> 16) & 0xff, (masked >>> 8) & 0xff, masked & 0xff];
  return `${bytes.join(".")}/${bits}`;
}

function ipv6Network(groups: number[], bits: number): string {
  const kept = groups.map((group, index) => {
    const from = index * 16;
    if (from + 16 <= bits) return group;
    if (from >= bits) return 0;
    return group & (0xffff << (16 - (bits - from)));
  });
  const whole = Math.ceil(bits / 16);
  return `${kept
    .slice(0, whole)
    .map((group) => group.toString(16))
    .join(":")}${whole < 8 ? "::" : ""}/${bits}`;
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` and a dotted IPv4 tail). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  const zeros = new Array<number>(8 - front.length - back.length).fill(0);
  return [...front, ...zeros, ...back];
}

/** The opaque counter name of the network of `address` (32 hex digits), or null. */
export function addressCounter(
  address: string,
  key: Uint8Array,
  width: NetworkWidth = CLIENT,
): string | null {
  const network = addressNetwork(address, width);
  if (network === null) return null;
  return createHmac("sha256", key).update(network, "utf8").digest("hex").slice(0, 32);
}
