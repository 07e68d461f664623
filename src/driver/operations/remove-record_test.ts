// The removal plans from the watch cache as it is, then checks its record against the VMs "not
// older than" that record: a VM the cache did not show yet still protects its PVC.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION_REMOVED_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../../harvester/labels.js';
import type { ListRead } from '../../harvester/removal-scope.js';
import { silentLogger } from '../../log/logger.js';
import { newDriverConfig } from '../config/index.js';
import type { HarvesterApi, Pvc, Vm } from '../../harvester-access/harvester-api.js';
import type { OperationContext } from './context.js';
import { recordPlan } from './remove.js';

const NS = 'default';
const NAME = 'mycluster-pool1-7f8d9c5b6-x2v9q';
const BOOT = `${NAME}-disk-0-abcde`;

function vm(name: string, rv: string, annotations: Record<string, string> = {}): Vm {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace: NS,
      resourceVersion: rv,
      uid: `uid-${name}`,
      labels: { [LABEL_GUEST_CLUSTER_NAME]: 'mycluster' },
      annotations,
    },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: { devices: {} },
          volumes: [{ name: 'disk-0', persistentVolumeClaim: { claimName: BOOT } }],
        },
      },
    },
  };
}

const bootPvc = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: BOOT, namespace: NS, uid: 'uid-boot' },
  spec: {},
} as Pvc;

/** A Harvester whose watch cache has not seen `rescue` (made the moment before) yet. */
function harvester() {
  let own = vm(NAME, '100');
  const rescue = vm('mycluster-rescue', '101');
  const reads: string[] = [];
  const records: string[] = [];
  let revision = 101;
  const api = {
    findVm: (_: string, name: string) => Promise.resolve(name === NAME ? own : undefined),
    findVmi: () => Promise.resolve(undefined),
    findPvc: (_: string, name: string) => Promise.resolve(name === BOOT ? bootPvc : undefined),
    listPvcs: () => Promise.resolve([]),
    listVms: (_: string, __: string | undefined, read: ListRead = 'consistent') => {
      reads.push(typeof read === 'object' ? `notOlderThan ${read.notOlderThan}` : read);
      // The cache as it is lags etcd; "not older than" the record, or a consistent read, does not.
      return Promise.resolve(read === 'cached' ? [own] : [own, rescue]);
    },
    patchVmAnnotations: (at: Vm, annotations: Record<string, string>) => {
      if (at.metadata.resourceVersion !== own.metadata.resourceVersion) throw new Error('stale copy');
      const value = annotations[ANNOTATION_REMOVED_PVCS] ?? '';
      records.push(value);
      if (own.metadata.annotations?.[ANNOTATION_REMOVED_PVCS] !== value)
        own = vm(NAME, String(++revision), { [ANNOTATION_REMOVED_PVCS]: value });
      return Promise.resolve(own);
    },
  } as unknown as HarvesterApi;
  return { api, reads, records };
}

describe('recording a removal plan made from the watch cache', () => {
  it('checks it against every VM as of the record: a VM the cache missed keeps its PVC', async () => {
    const { api, reads, records } = harvester();
    const config = { ...newDriverConfig(NAME, '/store'), VMNamespace: NS, ClusterName: 'mycluster' };
    const ctx: OperationContext = {
      config,
      api,
      log: silentLogger,
      sshKeyPath: '/store/id_rsa',
      kubeconfigTrust: 'credential',
    };
    const recorded = await recordPlan(ctx);
    assert.ok(recorded);
    assert.deepEqual(
      recorded.plan.pvcs.map((p) => p.name),
      [],
      'the boot disk is used by mycluster-rescue and must stay',
    );
    assert.equal(recorded.vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS], '');
    // Planned from the cache (the boot disk), checked "not older than" that record, recorded
    // without it, checked again.
    assert.deepEqual(records, [BOOT, '']);
    assert.deepEqual(reads, ['cached', 'notOlderThan 102', 'notOlderThan 103']);
  });
});
