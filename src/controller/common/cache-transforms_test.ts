import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP } from '../../harvester/labels.js';
import type { KubeObject } from '../../kube/resources.js';
import { cloudProviderClusterName } from '../../rancher/chart-values.js';
import { slimCluster, slimHarvesterMachine, slimMachine, slimSecret } from './cache-transforms.js';
import { hookAnnotation } from '../constants.js';
import { shapeChecked } from './object-shape.js';
import { credentialCandidates, findMachinePool } from './credential-choice.js';
import { classifyDeletion } from '../gate/deletion-scope.js';
import { isHarvesterBacked } from '../gate/machine-reconciler.js';
import { collectReferences } from '../credentials/references.js';
import type { CapiMachine, HarvesterMachine, ProvisioningCluster } from './types.js';

const HOOK = hookAnnotation('harvester-machine-cleanup');
const managedFields = [{ manager: 'cluster-api', operation: 'Update', fieldsV1: { 'f:status': {} } }];

/** Objects as Rancher and Cluster API leave them, with everything the caches drop. */
const machine = (deleting: boolean): CapiMachine =>
  ({
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Machine',
    metadata: {
      name: 'c1-pool1-abc-x2v9q',
      namespace: 'fleet-default',
      uid: 'u-m',
      resourceVersion: '7',
      ...(deleting ? { deletionTimestamp: '2026-11-30T10:00:00Z' } : {}),
      labels: {
        'cluster.x-k8s.io/cluster-name': 'c1',
        'cluster.x-k8s.io/deployment-name': 'c1-pool1',
        'cluster.x-k8s.io/set-name': 'c1-pool1-abc',
        'machine-template-hash': '123',
        'rke.cattle.io/rke-machine-pool-name': 'pool1',
      },
      annotations: {
        [HOOK]: 'harvester-machine-controller',
        'pre-terminate.delete.hook.machine.cluster.x-k8s.io/other': 'someone',
        'cluster.x-k8s.io/delete-machine': 'yes',
        big: 'x'.repeat(1000),
      },
      ownerReferences: [
        { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'MachineSet', name: 'c1-pool1-abc', uid: 'u-ms' },
      ],
      finalizers: ['machine.cluster.x-k8s.io'],
      managedFields,
    },
    spec: {
      clusterName: 'c1',
      bootstrap: { dataSecretName: 'b' },
      infrastructureRef: {
        apiVersion: 'rke-machine.cattle.io/v1',
        kind: 'HarvesterMachine',
        name: 'c1-pool1-abc-x2v9q',
        namespace: 'fleet-default',
      },
      providerID: 'harvester://x',
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  }) as unknown as CapiMachine;

const harvesterMachine = (): HarvesterMachine =>
  ({
    apiVersion: 'rke-machine.cattle.io/v1',
    kind: 'HarvesterMachine',
    metadata: {
      name: 'c1-pool1-abc-x2v9q',
      namespace: 'fleet-default',
      uid: 'u-hm',
      resourceVersion: '8',
      labels: {
        'cluster.x-k8s.io/cluster-name': 'c1',
        'cluster.x-k8s.io/deployment-name': 'c1-pool1',
        'rke.cattle.io/rke-machine-pool-name': 'pool1',
        'rke.cattle.io/capi-machine-name': 'c1-pool1-abc-x2v9q',
        'rke.cattle.io/worker-role': 'true',
      },
      annotations: { 'cluster.x-k8s.io/cloned-from-name': 't' },
      ownerReferences: [
        {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'Machine',
          name: 'c1-pool1-abc-x2v9q',
          uid: 'u-m',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: ['wrangler.cattle.io/machine-provision-remove'],
      managedFields,
    },
    spec: {
      vmNamespace: 'default',
      userData: '#cloud-config\n'.repeat(100),
      cpuCount: '4',
      common: { cloudCredentialSecretName: 'cattle-global-data:cc-pool' },
    },
    status: { cloudCredentialSecretName: 'cattle-global-data:cc-old', conditions: [], addresses: [] },
  }) as unknown as HarvesterMachine;

const provisioningCluster = (optOut: boolean): ProvisioningCluster =>
  ({
    apiVersion: 'provisioning.cattle.io/v1',
    kind: 'Cluster',
    metadata: {
      name: 'c1',
      namespace: 'fleet-default',
      uid: 'u-c',
      resourceVersion: '9',
      annotations: {
        ...(optOut ? { [ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP]: 'true' } : {}),
        'objectset.rio.cattle.io/applied': 'H4sI'.repeat(500),
      },
      managedFields,
    },
    spec: {
      cloudCredentialSecretName: 'cattle-global-data:cc-cluster',
      kubernetesVersion: 'v1.33.5+rke2r1',
      rkeConfig: {
        chartValues: {
          'harvester-cloud-provider': { global: { cattle: { clusterName: 'c1-lb' } }, other: 'x' },
          'rke2-calico': {},
        },
        machineGlobalConfig: { cni: 'calico' },
        machinePools: [
          {
            name: 'pool1',
            quantity: 3,
            cloudCredentialSecretName: 'cattle-global-data:cc-pool',
            machineConfigRef: { kind: 'HarvesterConfig', name: 'nc-c1-pool1' },
            labels: { a: 'b' },
          },
        ],
      },
    },
    status: {
      cloudCredentialSecretName: 'cattle-global-data:cc-cluster',
      clientSecretName: 'c1-kubeconfig',
      conditions: [{}],
    },
  }) as unknown as ProvisioningCluster;

const slim = <T>(f: (o: KubeObject) => KubeObject, o: T): T => f(o as unknown as KubeObject) as unknown as T;
const size = (o: unknown): number => JSON.stringify(o).length;

describe('cache transforms', () => {
  it('keep of a Machine its cluster, pool labels, hooks, opt-out and infrastructure reference, nothing else', () => {
    const s = slim(slimMachine, machine(false));
    assert.deepEqual(s.metadata, {
      name: 'c1-pool1-abc-x2v9q',
      namespace: 'fleet-default',
      uid: 'u-m',
      resourceVersion: '7',
      labels: {
        'cluster.x-k8s.io/cluster-name': 'c1',
        'cluster.x-k8s.io/deployment-name': 'c1-pool1',
        'rke.cattle.io/rke-machine-pool-name': 'pool1',
      },
      annotations: {
        [HOOK]: 'harvester-machine-controller',
        'pre-terminate.delete.hook.machine.cluster.x-k8s.io/other': 'someone',
      },
    });
    assert.deepEqual(s.spec, { clusterName: 'c1', infrastructureRef: machine(false).spec.infrastructureRef });
    assert.equal((s as { status?: unknown }).status, undefined);
  });

  it('keep of a HarvesterMachine its cluster and pool labels, its Machine, VM namespace and credentials', () => {
    const s = slim(slimHarvesterMachine, harvesterMachine());
    assert.deepEqual(s, {
      apiVersion: 'rke-machine.cattle.io/v1',
      kind: 'HarvesterMachine',
      metadata: {
        name: 'c1-pool1-abc-x2v9q',
        namespace: 'fleet-default',
        uid: 'u-hm',
        resourceVersion: '8',
        labels: {
          'cluster.x-k8s.io/cluster-name': 'c1',
          'cluster.x-k8s.io/deployment-name': 'c1-pool1',
          'rke.cattle.io/rke-machine-pool-name': 'pool1',
          'rke.cattle.io/capi-machine-name': 'c1-pool1-abc-x2v9q',
        },
        ownerReferences: [{ kind: 'Machine', name: 'c1-pool1-abc-x2v9q' }],
      },
      spec: { vmNamespace: 'default', common: { cloudCredentialSecretName: 'cattle-global-data:cc-pool' } },
      status: { cloudCredentialSecretName: 'cattle-global-data:cc-old' },
    });
    assert.ok(size(s) * 4 < size(harvesterMachine()), `${size(s)} of ${size(harvesterMachine())} bytes kept`);
  });

  it('keep of a cluster its opt-out, credentials, pools and the load balancers’ cluster name', () => {
    const s = slim(slimCluster, provisioningCluster(true));
    assert.deepEqual(s.metadata.annotations, { [ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP]: 'true' });
    assert.equal(slim(slimCluster, provisioningCluster(false)).metadata.annotations, undefined);
    assert.equal(cloudProviderClusterName(s), 'c1-lb');
    // When the cluster was made (Rancher's clock): no host volume made before it is its own.
    const made = slim(slimCluster, {
      ...provisioningCluster(false),
      metadata: { ...provisioningCluster(false).metadata, creationTimestamp: '2026-11-01T08:00:00Z' },
    });
    assert.equal(made.metadata.creationTimestamp, '2026-11-01T08:00:00Z');
    // What tells the guest watch Rancher wrote the cluster's kubeconfig (guest-watches.ts).
    assert.deepEqual(s.status, {
      cloudCredentialSecretName: 'cattle-global-data:cc-cluster',
      clientSecretName: 'c1-kubeconfig',
    });
    assert.deepEqual(s.spec?.rkeConfig?.machinePools, [
      {
        name: 'pool1',
        cloudCredentialSecretName: 'cattle-global-data:cc-pool',
        machineConfigRef: { kind: 'HarvesterConfig', name: 'nc-c1-pool1' },
      },
    ]);
    assert.ok(
      size(s) * 3 < size(provisioningCluster(true)),
      `${size(s)} of ${size(provisioningCluster(true))} bytes kept`,
    );
  });

  it('leave every decision of the reconcilers as it is on the full objects', () => {
    for (const deleting of [false, true])
      for (const optOut of [false, true]) {
        const [m, hm, c] = [machine(deleting), harvesterMachine(), provisioningCluster(optOut)];
        const [sm, shm, sc] = [slim(slimMachine, m), slim(slimHarvesterMachine, hm), slim(slimCluster, c)];
        assert.equal(isHarvesterBacked(sm), isHarvesterBacked(m));
        assert.equal(sm.metadata.annotations?.[HOOK], m.metadata.annotations?.[HOOK]);
        assert.deepEqual(
          classifyDeletion({ machine: sm, capiCluster: undefined, provisioningCluster: sc }),
          classifyDeletion({ machine: m, capiCluster: undefined, provisioningCluster: c }),
        );
        const pool = (mm: CapiMachine, h: HarvesterMachine, cc: ProvisioningCluster) =>
          findMachinePool({
            cluster: cc,
            machineLabels: { ...h.metadata.labels, ...mm.metadata.labels },
            machineName: mm.metadata.name,
          });
        const [slimPool, fullPool] = [pool(sm, shm, sc), pool(m, hm, c)];
        assert.equal(slimPool?.pool.name, fullPool?.pool.name);
        assert.equal(slimPool?.matchedBy, fullPool?.matchedBy);
        assert.deepEqual(
          credentialCandidates({ cluster: sc, pool: pool(sm, shm, sc)?.pool, harvesterMachine: shm }),
          credentialCandidates({ cluster: c, pool: pool(m, hm, c)?.pool, harvesterMachine: hm }),
        );
        assert.deepEqual(collectReferences([sc], [shm]), collectReferences([c], [hm]));
      }
  });

  it('keeps no data of a Secret that is not a Harvester credential', () => {
    assert.deepEqual(slimSecret({ metadata: { name: 's' }, data: { token: 'x' } } as never), {
      metadata: { name: 's' },
    });
    const kept = slimSecret({
      metadata: { name: 'cc', annotations: { 'rancher.io/expiration-timestamp': '1', other: '2' } },
      data: { 'harvestercredentialConfig-kubeconfigContent': 'eA==', other: 'y' },
    } as never);
    assert.deepEqual(kept, {
      metadata: { name: 'cc', annotations: { 'rancher.io/expiration-timestamp': '1' } },
      data: { 'harvestercredentialConfig-kubeconfigContent': 'eA==' },
    });
  });
});

describe('cache transforms: shape checks', () => {
  const reason = (slim: (o: KubeObject) => KubeObject, o: unknown): string => {
    const dropped: string[] = [];
    const kept = shapeChecked(slim, (r) => dropped.push(r))(o as KubeObject);
    return kept ? 'kept' : (dropped[0] ?? 'dropped without a reason');
  };
  it('drops and names a malformed object instead of throwing later', () => {
    const meta = { name: 'm1', namespace: 'fleet-default' };
    assert.equal(reason(slimMachine, { metadata: meta, spec: { clusterName: 'c1' } }), 'kept');
    assert.equal(reason(slimMachine, { metadata: { ...meta, name: 7 } }), 'metadata.name');
    assert.equal(reason(slimMachine, { metadata: meta, spec: { clusterName: ['c1'] } }), 'spec.clusterName');
    assert.equal(
      reason(slimHarvesterMachine, { metadata: { ...meta, labels: { a: 1 } }, spec: {} }),
      'metadata.labels',
    );
    assert.equal(
      reason(slimHarvesterMachine, { metadata: meta, spec: { common: { cloudCredentialSecretName: {} } } }),
      'spec.common.cloudCredentialSecretName',
    );
    assert.equal(
      reason(slimCluster, { metadata: meta, spec: { rkeConfig: { machinePools: { p: 1 } } } }),
      'spec.rkeConfig.machinePools',
    );
    assert.equal(
      reason(slimCluster, { metadata: meta, status: { clientSecretName: 5 } }),
      'status.clientSecretName',
    );
    assert.equal(reason(slimSecret, { metadata: meta, data: { kubeconfig: 5 } }), 'data');
    assert.equal(reason(slimSecret, { metadata: { ...meta, name: 'n'.repeat(300) } }), 'metadata.name');
  });

  it('keeps an oversized cloud credential, so the credential checks mark it invalid naming the field', () => {
    // 300 KiB of kubeconfig, base64: past an annotation's bound, within a Secret's 1 MiB.
    const kubeconfig = Buffer.from('x'.repeat(300 * 1024)).toString('base64');
    const credential = {
      metadata: { name: 'cc-big', namespace: 'cattle-global-data' },
      data: { 'harvestercredentialConfig-kubeconfigContent': kubeconfig },
    };
    assert.equal(reason(slimSecret, credential), 'kept');
  });
});
