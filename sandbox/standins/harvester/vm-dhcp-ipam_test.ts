// vm-dhcp-controller's IPAM (vm-dhcp-ipam.ts) as its pkg/ipam hands out, books and refuses addresses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NetworkIpam } from './vm-dhcp-ipam.js';

describe('vm-dhcp-controller IPAM', () => {
  it('hands out start..end less the revoked, a designated address once, a random free one otherwise', () => {
    const net = new NetworkIpam('default/net', '192.168.48.0/24', '192.168.48.81', '192.168.48.84');
    net.revoke('192.168.48.81');
    assert.equal(net.available(), 3);
    assert.equal(net.allocate('192.168.48.83'), '192.168.48.83');
    assert.throws(() => net.allocate('192.168.48.83'), /designated ip 192\.168\.48\.83 is already allocated/);
    assert.throws(() => net.allocate('192.168.48.90'), /no more ip addresses left/, 'outside start..end');
    const picked = new Set([net.allocate(undefined, () => 0), net.allocate(undefined, () => 0.99)]);
    assert.deepEqual([...picked].sort(), ['192.168.48.82', '192.168.48.84']);
    assert.throws(() => net.allocate(undefined), /no more ip addresses left in network default\/net ipam/);
    net.deallocate('192.168.48.82');
    assert.equal(net.used(), 2);
  });

  it('refuses a pool its subnet cannot hold, as NewIPSubnet does', () => {
    assert.throws(
      () => new NetworkIpam('n', '10.0.0.0/24', '10.0.1.1', '10.0.0.9'),
      /start ip address .* not within subnet/,
    );
    assert.throws(() => new NetworkIpam('n', '10.0.0.0/24', '10.0.0.9', '10.0.0.1'), /less than start/);
    assert.throws(() => new NetworkIpam('n', '10.0.0.0/24', '10.0.0.1', '10.0.0.255'), /equals broadcast/);
  });
});
