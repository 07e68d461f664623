import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseMac, unicastMacProblem } from './mac-address.js';

describe('a MAC taken from someone else’s object', () => {
  it('is one unicast interface address in one of Go’s 6-byte forms', () => {
    for (const mac of ['02:00:00:00:00:01', '52:54:00:12:34:56', '00-1A-2b-3C-4d-5E', '0200.0000.0001'])
      assert.equal(unicastMacProblem(mac), undefined, mac);
    assert.deepEqual(parseMac('0200.0000.00ff'), [2, 0, 0, 0, 0, 255]);
  });

  it('is refused when it is not 6 octets, all zeros, broadcast or multicast, saying which', () => {
    for (const [mac, why] of [
      ['', /not a MAC address of 6 octets/],
      ['02:00:00:00:00', /not a MAC address of 6 octets/],
      ['02:00:00:00:00:01:02', /not a MAC address of 6 octets/],
      ['02:00:00-00:00:01', /not a MAC address of 6 octets/],
      ['02:00:00:00:00:0g', /not a MAC address of 6 octets/],
      ['00:00:00:00:00:00', /all zeros/],
      ['ff:ff:ff:ff:ff:ff', /broadcast/],
      ['01:00:5e:00:00:01', /multicast/],
      ['33:33:00:00:00:01', /multicast/],
    ] as const)
      assert.match(unicastMacProblem(mac) ?? '', why, mac);
  });

  it('the multicast bit alone decides between unicast and multicast', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 6, maxLength: 6 }), (bytes) => {
        const mac = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(':');
        const unicast = ((bytes[0] ?? 0) & 1) === 0 && bytes.some((b) => b !== 0);
        assert.equal(unicastMacProblem(mac) === undefined, unicast, mac);
      }),
    );
  });
});
