import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatKeyValues,
  parseKeyValues,
  reservedKeyOwner,
  vmAnnotationProblems,
  vmLabelProblems,
} from './user-metadata.js';

describe('--harvester-vm-labels and --harvester-vm-annotations', () => {
  it('take key=value,key2=value2 (PR #83’s form) and a JSON object', () => {
    assert.deepEqual(parseKeyValues('app=web, example.com/tier=front').value, {
      app: 'web',
      'example.com/tier': 'front',
    });
    assert.deepEqual(parseKeyValues('{"note":"a, b=c"}').value, { note: 'a, b=c' });
    assert.deepEqual(parseKeyValues('').value, {});
    assert.deepEqual(parseKeyValues('empty=').value, { empty: '' });
  });

  it('refuse what is not key=value, a key twice, or JSON values that are not strings', () => {
    assert.match(parseKeyValues('app=web,tier').problems.join(), /entry 2 "tier" is not key=value/);
    assert.match(parseKeyValues('a=1,a=2').problems.join(), /key "a" is given twice/);
    assert.match(parseKeyValues('{"a":1}').problems.join(), /values must be strings \("a" is not\)/);
    assert.match(parseKeyValues('{"a":').problems.join(), /not valid JSON/);
  });

  it('refuse the keys the driver, Harvester, KubeVirt, Rancher and Kubernetes own, naming the key', () => {
    for (const key of [
      'harvesterhci.io/vmName',
      'harvesterhci.io/creator',
      'guestcluster.harvesterhci.io/name',
      'nodepool.harvesterhci.io/name',
      'network.harvesterhci.io/ippool-name',
      'kubevirt.io/domain',
      'vm.kubevirt.io/name',
      'kubernetes.io/hostname',
      'k8s.io/x',
      'harvester-machine.io/machine',
      'cluster.cattle.io/x',
    ]) {
      assert.ok(reservedKeyOwner(key), key);
      assert.match(
        vmLabelProblems({ [key]: 'x' }).join(),
        new RegExp(`label key "${key.replaceAll('.', '\\.')}" is owned by`),
      );
    }
    for (const key of ['app', 'app.kubernetes.io/name', 'example.com/tier', 'harvesterhci.io.example.com/x'])
      assert.equal(reservedKeyOwner(key), undefined, key);
  });

  // Each family below was accepted before: these keys reached the virt-launcher pod, where
  // the network plugin or the kubelet acts on them.
  const refusedFamilies: Array<[string, string[], RegExp]> = [
    [
      'Multus',
      [
        'k8s.v1.cni.cncf.io/networks',
        'k8s.v1.cni.cncf.io/network-status',
        'cni.cncf.io/x',
        'v1.multus-cni.io/default-network',
        'multus-cni.io/x',
      ],
      /Multus/,
    ],
    [
      'Kube-OVN',
      [
        'ovn.kubernetes.io/logical_switch',
        'ovn.kubernetes.io/ip_address',
        'ovn.kubernetes.io/mac_address',
        'attachnet.default.ovn.kubernetes.io/ip_address',
      ],
      /Kube-OVN/,
    ],
    ['OVN-Kubernetes', ['k8s.ovn.org/pod-networks'], /OVN-Kubernetes/],
    ['Calico (Canal)', ['cni.projectcalico.org/ipAddrs', 'cni.projectcalico.org/ipv4pools'], /Calico/],
    [
      'AppArmor and seccomp',
      ['container.apparmor.security.beta.kubernetes.io/compute', 'seccomp.security.alpha.kubernetes.io/pod'],
      /security profiles/,
    ],
    [
      'other kubernetes.io and k8s.io subdomains',
      [
        'kubectl.kubernetes.io/default-container',
        'topology.kubernetes.io/zone',
        'node.k8s.io/x',
        'api-approved.k8s.io/x',
      ],
      /Kubernetes/,
    ],
  ];
  for (const [family, keys, owner] of refusedFamilies)
    it(`refuse the keys of ${family} on labels and annotations alike, naming the key and why`, () => {
      for (const key of keys) {
        assert.match(reservedKeyOwner(key) ?? '', owner, key);
        const quoted = key.replaceAll('.', '\\.');
        assert.match(
          vmAnnotationProblems({ [key]: 'x' }).join(),
          new RegExp(`annotation key "${quoted}" is owned by .*; the driver never overrides it`),
        );
        assert.match(vmLabelProblems({ [key]: 'x' }).join(), new RegExp(`label key "${quoted}" is owned by`));
      }
    });

  it('refuse by the DNS domain of the prefix: a subdomain of a refused domain is refused, a look-alike is not', () => {
    assert.ok(reservedKeyOwner('a.b.cni.cncf.io/x'));
    assert.ok(reservedKeyOwner('deep.sub.kubevirt.io/x'));
    for (const key of [
      'app.kubernetes.io/name',
      'app.kubernetes.io/part-of',
      'notkubernetes.io/x',
      'kubernetes.io.example.com/x',
      'cncf.io/x',
      'example-cni.cncf.io.example.com/x',
      'mymultus-cni.io/x',
      'cluster.x-k8s.io/cluster-name',
    ])
      assert.equal(reservedKeyOwner(key), undefined, key);
  });

  it('refuse keys and label values Kubernetes would refuse, instead of changing them', () => {
    assert.match(vmLabelProblems({ 'Bad_Prefix.com/a': 'x' }).join(), /prefix that is not a DNS subdomain/);
    assert.match(vmLabelProblems({ '-a': 'x' }).join(), /not a valid key/);
    assert.match(vmLabelProblems({ a: 'not ok' }).join(), /is not a label value/);
    assert.match(vmLabelProblems({ a: 'x'.repeat(64) }).join(), /is not a label value/);
    assert.deepEqual(vmLabelProblems({ a: '', b: 'web-1.x_y' }), []);
    assert.deepEqual(vmAnnotationProblems({ note: 'anything, at all: {"json": true}' }), []);
    assert.match(vmAnnotationProblems({ big: 'x'.repeat(256 * 1024) }).join(), /at most 262144 bytes/);
  });

  it('formats them back sorted', () => {
    assert.equal(formatKeyValues({ b: '2', a: '1' }), 'a=1,b=2');
  });
});
