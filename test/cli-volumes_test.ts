// volumes orphaned through the built CLI against the sandbox: volumes of a deleted guest
// cluster (left by a plain removal, or never attached) are listed by cluster, an
// unlabelled one under "unknown cluster"; no volume in use (boot disk, hot-plugged, used
// by a pod) and no volume of a cluster that still has VMs (by label, or by an event that
// ties it to one of its VMs) is ever listed; --delete --yes deletes exactly the listed
// volumes of known clusters, and those of the unknown cluster only with --include-unknown.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { VirtualMachine, VirtualMachineInstance } from '../src/harvester/types.js';
import { referencedClaims } from '../src/harvester/removal-plan.js';
import { KubeClient } from '../src/kube/client.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { DRIVER_RULES } from '../sandbox/sandbox-seeds.js';
import { eventually } from './support/eventually.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { livePvcs, vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from './support/volumes.js';
import { CliRunner, MACHINE_FLAGS, kubeconfigFile, tempDir } from './cli-harness.js';

const fixture = useSandbox();
const dir = tempDir('hm-cli-vol-');
const cli = new CliRunner(path.join(dir, 'store'));
const ns = 'default';

interface Report {
  groups: Array<{
    cluster: string | null;
    volumes: Array<{ name: string; size: string; age: string; history: string[]; clusterSource?: string }>;
  }>;
  skipped: Record<
    'inUse' | 'liveCluster' | 'tooNew' | 'deleting' | 'owned',
    Array<{ name: string; reason: string }>
  >;
  notConsidered: number;
  podsChecked: boolean;
  deletion?: { deleted: string[]; skipped: Array<{ volume: string }>; failed: unknown[] };
}

const world = {
  liveBoot: [] as string[],
  hotpluggedLive: '',
  detachedLive: '',
  eventTiedLive: '',
  podUsed: '',
  leakedLabelled: '',
  leakedUnlabelled: '',
  neverAttached: '',
  adminKubeconfig: '',
};

const grouped = (r: Report): Record<string, string[]> =>
  Object.fromEntries(r.groups.map((g) => [g.cluster ?? '(unknown)', g.volumes.map((v) => v.name).sort()]));
const skippedNames = (r: Report, bucket: keyof Report['skipped']): string[] =>
  r.skipped[bucket].map((s) => s.name).sort();

async function claimsInUse(): Promise<Set<string>> {
  const { admin } = fixture.sandbox.harvester;
  const vms = await admin.list<VirtualMachine & KubeObject>(Resources.virtualMachine, { namespace: ns });
  const vmis = await admin.list<VirtualMachineInstance & KubeObject>(Resources.virtualMachineInstance, {
    namespace: ns,
  });
  return new Set([
    ...vms.items.flatMap((v) => referencedClaims(v.spec.template.spec.volumes)),
    ...vmis.items.flatMap((v) => [
      ...referencedClaims(v.spec?.volumes),
      ...(v.status?.volumeStatus ?? []).flatMap((s) => s.persistentVolumeClaimInfo?.claimName ?? []),
    ]),
  ]);
}

describe('volumes orphaned', () => {
  it('lists the volumes of deleted guest clusters by cluster, and nothing in use or of a live cluster', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const { csi } = sandbox.standIns;
    world.adminKubeconfig = kubeconfigFile(dir, 'admin', sandbox.harvester.adminKubeconfig);
    const driverKubeconfig = kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect);

    // A live guest cluster: a machine with a hot-plugged volume, a labelled detached one and an
    // unlabelled detached one that an event ties to the machine.
    const live = 'vol-live-pool1-1f2e3-aa01';
    await cli.expect(0, [
      'create',
      live,
      '--kubeconfig',
      driverKubeconfig,
      '--harvester-cluster-name=vol-live',
      ...MACHINE_FLAGS,
    ]);
    world.liveBoot = await vmPvcNames(admin, ns, live);
    for (const disk of world.liveBoot) await waitPvcExists(admin, ns, disk);
    world.hotpluggedLive = await csi.createVolume({ namespace: ns, size: '1Gi' });
    await csi.hotplug({ namespace: ns, vmName: live, pvcName: world.hotpluggedLive });
    world.detachedLive = await recordedVolume(csi, admin, {
      namespace: ns,
      cluster: 'vol-live',
      size: '1Gi',
    });
    world.eventTiedLive = await csi.createVolume({ namespace: ns, size: '3Gi' });
    await admin.create(Resources.event, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${live}.hotplug`, namespace: ns },
      involvedObject: {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        name: live,
        namespace: ns,
      },
      reason: 'VolumeReady',
      message: `Successfully attached hotplug volume ${world.eventTiedLive}`,
      type: 'Normal',
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
    } as KubeObject);
    // A CSI volume used by a pod (not a VM), and a PVC that is no VM or guest-cluster volume at all.
    world.podUsed = await csi.createVolume({ namespace: ns, size: '1Gi' });
    await admin.create({ group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true }, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'uses-a-volume', namespace: ns },
      spec: {
        containers: [{ name: 'app', image: 'busybox' }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: world.podUsed } }],
      },
    } as KubeObject);
    await admin.create(Resources.pvc, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-prometheus-0', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);

    // A guest cluster deleted node by node (plain removals keep the hot-plugged volumes), and one
    // whose only volume was never attached.
    const gone = 'vol-gone-pool1-4d5c6-bb01';
    await cli.expect(0, [
      'create',
      gone,
      '--kubeconfig',
      driverKubeconfig,
      '--harvester-cluster-name=vol-gone',
      ...MACHINE_FLAGS,
    ]);
    world.leakedLabelled = await recordedVolume(csi, admin, {
      namespace: ns,
      cluster: 'vol-gone',
      size: '2Gi',
    });
    world.leakedUnlabelled = await csi.createVolume({ namespace: ns, size: '4Gi' });
    for (const pvcName of [world.leakedLabelled, world.leakedUnlabelled])
      await csi.hotplug({ namespace: ns, vmName: gone, pvcName });
    await cli.expect(0, ['rm', '--yes', gone]);
    world.neverAttached = await recordedVolume(csi, admin, {
      namespace: ns,
      cluster: 'vol-gone2',
      size: '1Gi',
    });

    const report = (
      await cli.expect(0, [
        'volumes',
        'orphaned',
        '--kubeconfig',
        world.adminKubeconfig,
        '--min-age',
        '0s',
        '-o',
        'json',
      ])
    ).json<Report>();
    assert.deepEqual(grouped(report), {
      'vol-gone': [world.leakedLabelled],
      'vol-gone2': [world.neverAttached],
      '(unknown)': [world.leakedUnlabelled],
    });
    assert.equal(report.groups[0]?.volumes[0]?.size, '2Gi');
    assert.match(report.groups[0]?.volumes[0]?.age ?? '', /^\d+s$/);
    assert.deepEqual(
      skippedNames(report, 'inUse'),
      [...world.liveBoot, world.hotpluggedLive, world.podUsed].sort(),
    );
    assert.match(
      report.skipped.inUse.find((s) => s.name === world.podUsed)?.reason ?? '',
      /pod default\/uses-a-volume/,
    );
    assert.deepEqual(skippedNames(report, 'liveCluster'), [world.detachedLive, world.eventTiedLive].sort());
    assert.ok(report.notConsidered >= 1, 'data-prometheus-0 is not considered');
    assert.equal(report.podsChecked, true);

    const inUse = await claimsInUse();
    const listed = report.groups.flatMap((g) => g.volumes.map((v) => v.name));
    assert.deepEqual(
      listed.filter((n) => inUse.has(n)),
      [],
      'no volume a VM or VM instance uses is listed',
    );

    const text = (
      await cli.expect(0, [
        'volumes',
        'orphaned',
        '--kubeconfig',
        world.adminKubeconfig,
        '-n',
        ns,
        '--min-age=0s',
      ])
    ).stdout;
    assert.match(text, /^3 orphaned volume\(s\)/);
    assert.match(
      text,
      new RegExp(
        `\\nGuest cluster "vol-gone"\\n  NAMESPACE +NAME +SIZE +AGE +WHY\\n  default +${world.leakedLabelled} +2Gi +\\d+s +guest-cluster volume \\(labelled\\); cluster from label`,
      ),
    );
    assert.match(
      text,
      new RegExp(`\\nUnknown cluster\\n  NAMESPACE.*\\n  default +${world.leakedUnlabelled} +4Gi`),
    );
    assert.match(text, /--delete leaves them alone unless --include-unknown/);

    // The default --min-age leaves out volumes made moments ago (a CSI volume is attached right after).
    const young = (
      await cli.expect(0, ['volumes', 'orphaned', '--kubeconfig', world.adminKubeconfig, '-o', 'json'])
    ).json<Report>();
    assert.deepEqual(young.groups, []);
    assert.deepEqual(skippedNames(young, 'tooNew'), listed.sort());

    // With a credential made for the Go driver (the driver's rights without the pod list the
    // cleanup controller's volume cleanup needs, no events): still works, and says what it
    // could not check.
    const goDriverUser = await createTokenUser(admin, {
      expiresAt: new Date(Date.now() + 3_600_000),
      rules: DRIVER_RULES.filter((r) => !r.resources.includes('pods')),
    });
    const goDriverConfig = tokenKubeconfig({
      name: 'harvester',
      server: sandbox.proxy.url,
      caPem: sandbox.proxy.caPem,
      token: goDriverUser.token,
    });
    const goDriverClient = KubeClient.fromKubeconfig(goDriverConfig);
    await eventually('the Go driver credential may list volumes', () =>
      goDriverClient.list(Resources.pvc, { namespace: ns }).then(
        () => true,
        () => false,
      ),
    );
    const goDriverKubeconfig = kubeconfigFile(dir, 'go-driver', goDriverConfig);
    const narrow = (
      await cli.expect(0, [
        'volumes',
        'orphaned',
        '--kubeconfig',
        goDriverKubeconfig,
        '-n',
        ns,
        '--min-age',
        '0s',
        '-o',
        'json',
      ])
    ).json<Report>();
    assert.equal(narrow.podsChecked, false);
    assert.deepEqual(grouped(narrow)['vol-gone'], [world.leakedLabelled]);
    assert.deepEqual(grouped(narrow)['vol-gone2'], [world.neverAttached]);
  });

  it('--delete --yes deletes only the listed volumes of known clusters; --include-unknown the rest', async () => {
    const { admin } = fixture.sandbox.harvester;
    const kept = [
      ...world.liveBoot,
      world.hotpluggedLive,
      world.detachedLive,
      world.eventTiedLive,
      world.podUsed,
      'data-prometheus-0',
    ];
    const args = ['volumes', 'orphaned', '--kubeconfig', world.adminKubeconfig, '--min-age', '0s'];

    const unconfirmed = await cli.expect(2, [...args, '--delete']);
    assert.match(unconfirmed.stderr, /pass --yes to confirm/);
    assert.ok((await livePvcs(admin, ns)).has(world.leakedLabelled), 'nothing deleted without confirmation');

    const first = (await cli.expect(0, [...args, '--delete', '--yes', '-o', 'json'])).json<Report>();
    assert.deepEqual(
      first.deletion?.deleted.sort(),
      [`${ns}/${world.leakedLabelled}`, `${ns}/${world.neverAttached}`].sort(),
    );
    assert.deepEqual(first.deletion?.failed, []);
    for (const pvc of [world.leakedLabelled, world.neverAttached]) await waitPvcGone(admin, ns, pvc);
    let live = await livePvcs(admin, ns);
    assert.ok(
      live.has(world.leakedUnlabelled),
      'the unknown cluster’s volume stays without --include-unknown',
    );
    for (const pvc of kept) assert.ok(live.has(pvc), `${pvc} stays`);

    const second = await cli.expect(0, [...args, '--delete', '--yes', '--include-unknown']);
    assert.match(second.stderr, new RegExp(`deleted ${ns}/${world.leakedUnlabelled}`));
    assert.match(second.stdout, /Deleted 1, skipped 0, failed 0\.\n$/);
    await waitPvcGone(admin, ns, world.leakedUnlabelled);
    live = await livePvcs(admin, ns);
    for (const pvc of kept) assert.ok(live.has(pvc), `${pvc} stays`);
    const after = (await cli.expect(0, [...args, '-o', 'json'])).json<Report>();
    assert.deepEqual(after.groups, []);
  });
});
