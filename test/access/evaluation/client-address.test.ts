/** Client addresses as evaluation-key counters: IPv4 per address, IPv6 per /64, never stored. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import {
  addressCounter,
  addressNetwork,
  SITE,
} from "../../../src/access/evaluation/client-address.js";

describe("client addresses", () => {
  test("IPv4 is the address; IPv6 its /64; IPv4-mapped IPv6 the IPv4 address", () => {
    const cases: [string, string | null][] = [
      ["192.0.2.1", "192.0.2.1"],
      ["::ffff:192.0.2.1", "192.0.2.1"],
      ["::ffff:c000:201", "192.0.2.1"],
      ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
      ["2001:DB8:1:2:ffff::1", "2001:db8:1:2::/64"],
      ["2001:db8::1", "2001:db8:0:0::/64"],
      ["::1", "0:0:0:0::/64"],
      ["fe80::1%eth0", "fe80:0:0:0::/64"],
      ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
      ["not an address", null],
      ["", null],
      ["192.0.2.256", null],
    ];
    for (const [address, network] of cases) assert.equal(addressNetwork(address), network, address);
  });

  test("a site is an IPv4 /24 or an IPv6 /48", () => {
    const cases: [string, string | null][] = [
      ["192.0.2.1", "192.0.2.0/24"],
      ["192.0.2.255", "192.0.2.0/24"],
      ["::ffff:10.1.2.3", "10.1.2.0/24"],
      ["2001:db8:1:2:3:4:5:6", "2001:db8:1::/48"],
      ["2001:db8:1:ffff::1", "2001:db8:1::/48"],
      ["2001:db8::1", "2001:db8:0::/48"],
      ["garbage", null],
    ];
    for (const [address, network] of cases) {
      assert.equal(addressNetwork(address, SITE), network, address);
    }
    const key = randomBytes(32);
    assert.equal(
      addressCounter("2001:db8:1:2::a", key, SITE),
      addressCounter("2001:db8:1:ff::b", key, SITE),
    );
    assert.notEqual(addressCounter("192.0.2.1", key, SITE), addressCounter("192.0.3.1", key, SITE));
    // A site's counter is never a client's: the names differ even for one IPv4 address.
    assert.notEqual(addressCounter("192.0.2.0", key, SITE), addressCounter("192.0.2.0", key));
  });

  test("a counter is an HMAC of the network: the same for one /64, opaque without the key", () => {
    const key = randomBytes(32);
    const one = addressCounter("2001:db8:1:2::a", key);
    assert.match(one ?? "", /^[0-9a-f]{32}$/);
    assert.equal(addressCounter("2001:db8:1:2:ffff:ffff:ffff:ffff", key), one);
    assert.notEqual(addressCounter("2001:db8:1:3::a", key), one);
    assert.notEqual(addressCounter("2001:db8:1:2::a", randomBytes(32)), one);
    assert.equal(addressCounter("192.0.2.1", key), addressCounter("::ffff:192.0.2.1", key));
    assert.notEqual(addressCounter("192.0.2.1", key), addressCounter("192.0.2.2", key));
    assert.equal(addressCounter("garbage", key), null);
    assert.equal((one ?? "").includes("2001"), false);
  });
});
