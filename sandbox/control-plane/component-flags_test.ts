import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiserverFlags,
  apiserverUrl,
  controllerManagerFlags,
  schedulerFlags,
  type ApiserverSetup,
} from './component-flags.js';

const setup = (bindAddress: '127.0.0.1' | '::1'): ApiserverSetup => ({
  name: 'harvester',
  dir: '/tmp/cp',
  server: apiserverUrl(bindAddress, 6443),
  bindAddress,
  port: 6443,
  etcdUrl: 'http://127.0.0.1:2379',
  servingCert: { certPath: '/tmp/cp/s.crt', keyPath: '/tmp/cp/s.key' },
  clientCaFile: '/tmp/cp/ca.crt',
  serviceAccount: { publicKey: '/tmp/cp/sa.pub', privateKey: '/tmp/cp/sa.key' },
  requestheaderCaFile: '/tmp/cp/rh.crt',
  aggregatorCert: { certPath: '/tmp/cp/a.crt', keyPath: '/tmp/cp/a.key' },
});

const flag = (flags: string[], name: string): string | undefined =>
  flags.find((f) => f.startsWith(`${name}=`))?.slice(name.length + 1);

describe('the control plane components’ flags', () => {
  it('kube-apiserver binds and advertises loopback only, on the chosen port', () => {
    for (const address of ['127.0.0.1', '::1'] as const) {
      const flags = apiserverFlags(setup(address));
      assert.equal(flag(flags, '--bind-address'), address);
      assert.equal(flag(flags, '--advertise-address'), '127.0.0.1');
      assert.equal(flag(flags, '--secure-port'), '6443');
      assert.equal(flag(flags, '--etcd-prefix'), '/harvester');
      assert.equal(flag(flags, '--service-account-issuer'), `${apiserverUrl(address, 6443)}/`);
    }
    assert.equal(apiserverUrl('::1', 1), 'https://[::1]:1');
  });

  it('kube-controller-manager and kube-scheduler serve no port at all', () => {
    for (const flags of [controllerManagerFlags('/k'), schedulerFlags('/k')]) {
      assert.equal(flag(flags, '--secure-port'), '0');
      assert.equal(flag(flags, '--leader-elect'), 'false');
      assert.equal(flag(flags, '--kubeconfig'), '/k');
    }
  });

  it('the controller-manager acts as each controller’s own service account (the user Harvester’s PVC webhook lets pass)', () => {
    assert.equal(flag(controllerManagerFlags('/k'), '--use-service-account-credentials'), 'true');
    assert.match(flag(controllerManagerFlags('/k'), '--controllers') ?? '', /garbage-collector-controller/);
  });
});
