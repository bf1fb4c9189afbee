/**
 * Which counter a client address issues evaluation keys against. An IPv4 address is one
 * client; an IPv6 client usually holds a whole /64 (SLAAC, privacy addresses: a new address
 * is free), so IPv6 addresses are counted per /64 prefix. An IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, how a dual-stack socket reports IPv4 peers) is its IPv4 address.
 *
 * The counter is named by an HMAC of that network under a key derived from the deployment's
 * secret, so neither Redis nor memory ever holds an address, and a name cannot be reversed
 * by trying the 2^32 IPv4 addresses without the key.
 */
import { createHmac } from "node:crypto";
import { isIPv4, isIPv6 } from "node:net";

/** `192.0.2.1` → `192.0.2.1`; `2001:db8:1:2:3:4:5:6` → `2001:db8:1:2::/64`; null if neither. */
export function addressNetwork(address: string): string | null {
  if (isIPv4(address)) return address;
  const unscoped = address.split("%", 1)[0] ?? "";
  if (!isIPv6(unscoped)) return null;
  const groups = ipv6Groups(unscoped);
  const mapped =
    groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff
      ? `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
      : null;
  if (mapped !== null) return mapped;
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
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
export function addressCounter(address: string, key: Uint8Array): string | null {
  const network = addressNetwork(address);
  if (network === null) return null;
  return createHmac("sha256", key).update(network, "utf8").digest("hex").slice(0, 32);
}
