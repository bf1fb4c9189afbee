/**
 * Whose turn a request takes in the fair CPU pool: its principal when it has one, otherwise
 * its address, an IPv6 client counted by its /64.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FastifyRequest } from "fastify";
import { ANONYMOUS, keyPrincipal, x402Principal } from "../../src/access/principal.js";
import { fairShareKey } from "../../src/service/fair-share.js";

const requestFrom = (principal: FastifyRequest["principal"], ip: string) =>
  ({ principal, ip }) as FastifyRequest;

describe("fairShareKey", () => {
  test("a keyed or paying request takes its principal's turn, from any address", () => {
    const key = keyPrincipal("0123456789abcdef");
    assert.equal(fairShareKey(requestFrom(key, "127.0.0.1")), key);
    assert.equal(fairShareKey(requestFrom(key, "127.0.1.9")), key);
    const payer = x402Principal(`0x${"Ab".repeat(20)}`);
    assert.equal(fairShareKey(requestFrom(payer, "127.0.0.1")), payer);
  });

  test("an anonymous request takes its address's turn: an IPv4 address, an IPv6 /64", () => {
    assert.equal(fairShareKey(requestFrom(ANONYMOUS, "127.0.1.9")), "anon:127.0.1.9");
    assert.equal(fairShareKey(requestFrom(ANONYMOUS, "::ffff:127.0.1.9")), "anon:127.0.1.9");
    const inPrefix = ["2001:db8:1:2::1", "2001:db8:1:2:ffff:1:2:3"].map((ip) =>
      fairShareKey(requestFrom(ANONYMOUS, ip)),
    );
    assert.deepEqual(inPrefix, ["anon:2001:db8:1:2::/64", "anon:2001:db8:1:2::/64"]);
    assert.equal(fairShareKey(requestFrom(ANONYMOUS, "2001:db8:1:3::1")), "anon:2001:db8:1:3::/64");
    assert.equal(fairShareKey(requestFrom(ANONYMOUS, "not an address")), "anon:unknown");
  });
});
