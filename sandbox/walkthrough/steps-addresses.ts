// A pool with fixed addresses on a VLAN without DHCP (harvester#2099, #9810): the pool's
// HarvesterConfig names the network and the range (ipPoolInfo, the --harvester-ip-pool-info
// flag, as Rancher turns the flag into a field) and labels for its VMs (vmLabels); each of its
// machines, created at once, takes one address, claimed on Harvester (one ConfigMap per
// address, owned by the VM), and its guest configures it from the network data; the
// addresses are free again once the cluster is deleted.
import { keyText } from '../../src/api/object-key.js';
import { LABEL_ADDRESS_CLAIM } from '../../src/harvester/fixed-addresses/address-claims.js';
import type { VirtualMachine } from '../../src/harvester/types.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { SEED_STATIC_NETWORK, SEED_STATIC_SUBNET } from '../sandbox-seeds.js';
import { ExtraResources } from '../standins/names.js';
import type { Story } from './story.js';

export const FIXED_RANGE = '192.168.100.10-192.168.100.19';
export const FIXED_LABEL = 'app=harv01-web';

/** The pool's HarvesterConfig fields for fixed addresses and labels, as Rancher's form writes them. */
export function fixedAddressPool(namespace: string): Record<string, string> {
  const network = keyText(namespace, SEED_STATIC_NETWORK);
  return {
    networkName: network,
    ipPoolInfo: JSON.stringify({
      network,
      range: FIXED_RANGE,
      prefix: 24,
      gateway: SEED_STATIC_SUBNET.gateway,
      dns: [SEED_STATIC_SUBNET.dns],
    }),
    vmLabels: FIXED_LABEL,
  };
}

type Claim = KubeObject & { data?: Record<string, string> };

async function claims(story: Story): Promise<Claim[]> {
  const admin = story.world.sandbox.harvester.admin;
  return (
    await admin.list<Claim>(Resources.configMap, {
      namespace: story.view.namespace,
      labelSelector: LABEL_ADDRESS_CLAIM,
    })
  ).items.filter((c) => !c.metadata.deletionTimestamp);
}

const inRange = (address: string): boolean => {
  const last = Number(address.split('.')[3]);
  return address.startsWith('192.168.100.') && last >= 10 && last <= 19;
};

/** Each machine of the pool: its own address of the range, claimed and owned by its VM, and the pool's label on its pod. */
export async function checkFixedAddresses(story: Story, cluster: string): Promise<void> {
  const { say, view } = story;
  const admin = story.world.sandbox.harvester.admin;
  const held = await claims(story);
  const vms = await view.vms();
  const seen: string[] = [];
  for (const m of story.guest(cluster).machines) {
    const vm = await admin.get<VirtualMachine & KubeObject>(Resources.virtualMachine, {
      namespace: view.namespace,
      name: m.instanceName,
    });
    const ip = vms.find((v) => v.name === m.instanceName)?.ip ?? '';
    const claim = held.find((c) => c.data?.['machine'] === m.instanceName);
    const owner = claim?.metadata.ownerReferences?.[0];
    say.say(
      'Harvester',
      `VM ${m.instanceName}: ${ip} on ${SEED_STATIC_NETWORK} (MAC ${vm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress ?? '?'}), claimed by ConfigMap ${claim?.metadata.name ?? '(none)'} owned by ${owner ? `${owner.kind} ${owner.name}` : 'nobody'}`,
    );
    say.check(
      inRange(ip) && !seen.includes(ip) && claim?.data?.['address'] === ip && owner?.uid === vm.metadata.uid,
      `VM ${m.instanceName} has its own address of ${FIXED_RANGE} (${ip}), its claim owned by the VM`,
    );
    seen.push(ip);
    const [key, value] = FIXED_LABEL.split('=');
    const pods = await admin.list<KubeObject>(ExtraResources.pod, {
      namespace: view.namespace,
      labelSelector: `${FIXED_LABEL},vm.kubevirt.io/name=${m.instanceName}`,
    });
    say.check(
      vm.metadata.labels?.[key ?? ''] === value && pods.items.length === 1,
      `VM ${m.instanceName} and its virt-launcher pod carry the pool's label ${FIXED_LABEL} (a load balancer's selector finds them)`,
    );
  }
}

/** After the cluster is gone: no claim holds an address of the pool any more. */
export async function checkAddressesFreed(story: Story, cluster: string): Promise<void> {
  const left = (await claims(story)).filter((c) => (c.data?.['machine'] ?? '').startsWith(`${cluster}-`));
  story.say.check(
    left.length === 0,
    `the addresses of ${cluster} are free again (no claim left on ${SEED_STATIC_NETWORK})`,
    left.map((c) => `${c.metadata.name}: ${c.data?.['address'] ?? ''}`).join('\n'),
  );
}
