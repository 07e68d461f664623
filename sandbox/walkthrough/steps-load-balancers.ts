// The load balancers of a deleted guest cluster (harvester#1460, #5522; docs/upstream/load-balancers.md):
// before the deletion, each guest cluster's cloud provider has made a Harvester load
// balancer for one of its Services, with an address from an IP pool, on a Harvester whose
// load balancer controller does not clean up after guest clusters (v1.7.1); after it, the
// deleted cluster's load balancer is gone (our cleanup controller deleted it once the last
// VM was gone) and its address is free again, while the other cluster's stays.
import { keyText } from '../../src/api/object-key.js';
import { describeLoadBalancer, type IpPool } from '../../src/harvester/load-balancers.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { ensureGuestLoadBalancer, ensureIpPool } from '../standins/cloud-provider.js';
import { HARVESTER_VERSION } from '../harvester/version.js';
import type { Story } from './story.js';
import { FLEET_NS } from './world.js';

const POOL = {
  name: 'guest-clusters',
  subnet: '192.0.2.0/24',
  rangeStart: '192.0.2.10',
  rangeEnd: '192.0.2.99',
  gateway: '192.0.2.1',
};
/** A Harvester before load-balancer-harvester's guest-cluster cleanup (first in v1.8.0). */
const OLD_HARVESTER = 'v1.7.1';

export type GuestLoadBalancers = Map<string, string[]>;

async function allocated(story: Story): Promise<Record<string, string>> {
  const pool = await story.world.sandbox.harvester.admin.get<IpPool & KubeObject>(Resources.ipPool, {
    name: POOL.name,
  });
  return pool.status?.allocated ?? {};
}

async function setServerVersion(story: Story, value: string): Promise<void> {
  await story.world.sandbox.harvester.admin.patch(Resources.setting, { name: 'server-version' }, { value });
}

export async function makeLoadBalancers(
  story: Story,
  plan: Array<{ cluster: string; service: string }>,
): Promise<GuestLoadBalancers> {
  const { world, say, view } = story;
  const { admin } = world.sandbox.harvester;
  await setServerVersion(story, OLD_HARVESTER);
  say.say(
    'Harvester',
    `server-version set to ${OLD_HARVESTER}: a Harvester whose load balancer controller leaves a deleted guest cluster's load balancers (it deletes them itself only from v1.8.0, harvester#9452)`,
  );
  await ensureIpPool(admin, POOL);
  say.say('Harvester', `IP pool ${POOL.name}: ${POOL.rangeStart}-${POOL.rangeEnd} of ${POOL.subnet}`);
  const made: GuestLoadBalancers = new Map();
  for (const { cluster, service } of plan) {
    const lb = await ensureGuestLoadBalancer(admin, {
      cluster,
      namespace: view.namespace,
      service: { namespace: 'default', name: service },
    });
    made.set(cluster, [...(made.get(cluster) ?? []), lb.metadata.name]);
    say.say(
      'guest',
      `${cluster}'s cloud provider: Service default/${service} of type LoadBalancer → ${describeLoadBalancer(lb)}`,
    );
    say.check(
      lb.status?.allocatedAddress?.ipPool === POOL.name && Boolean(lb.status.allocatedAddress.ip),
      `${lb.metadata.name} holds an address of IP pool ${POOL.name}`,
    );
  }
  const taken = await allocated(story);
  say.say('Harvester', `IP pool ${POOL.name} status.allocated: ${JSON.stringify(taken)}`);
  return made;
}

export async function checkLoadBalancers(
  story: Story,
  made: GuestLoadBalancers,
  deleted: string,
  kept: string,
): Promise<void> {
  const { world, say, view } = story;
  const { admin } = world.sandbox.harvester;
  const gone = made.get(deleted) ?? [];
  const stays = made.get(kept) ?? [];
  const names = async (): Promise<string[]> =>
    (await admin.list<KubeObject>(Resources.loadBalancer, { namespace: view.namespace })).items.map(
      (l) => l.metadata.name,
    );
  const deadline = Date.now() + 60_000;
  let now = await names();
  while (gone.some((n) => now.includes(n)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    now = await names();
  }
  for (const line of world.controller.lines())
    if (
      line.event?.startsWith('HarvesterLoadBalancer') &&
      line.object === `Cluster ${keyText(FLEET_NS, deleted)}`
    )
      say.say('controller', `${deleted}: [${line.event}] ${line.msg}`);
  say.say('Harvester', `load balancers now: ${now.join(', ') || '(none)'}`);
  say.check(!gone.some((n) => now.includes(n)), `${deleted}'s load balancer(s) are gone: ${gone.join(', ')}`);
  say.check(
    stays.every((n) => now.includes(n)),
    `${kept}'s load balancer(s) stay: ${stays.join(', ')}`,
  );
  const taken = await allocated(story);
  say.say('Harvester', `IP pool ${POOL.name} status.allocated: ${JSON.stringify(taken)}`);
  const owners = Object.values(taken);
  say.check(
    owners.length === stays.length && stays.every((n) => owners.includes(keyText(view.namespace, n))),
    `${deleted}'s address is free again; only ${kept}'s is taken`,
  );
  await setServerVersion(story, HARVESTER_VERSION);
  say.say('Harvester', `server-version back to ${HARVESTER_VERSION}`);
}
