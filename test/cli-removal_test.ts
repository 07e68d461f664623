// rm --dry-run against what rm then really deletes, through the built CLI: a machine with
// a boot disk, a cloud-init Secret, two hot-plugged workload volumes and an unattached
// labelled volume, next to another cluster's machine. The preview (plain, and
// --whole-cluster before Rancher's annotation is set) lists exactly the VM, PVCs and
// Secrets that disappear, and what it keeps stays. Then the expired-credential story:
// exit 5 with the renew advice and nothing changed, and a fresh kubeconfig (flag or
// environment) wins over the saved one.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS, ANNOTATION_REMOVED_PVCS } from '../src/harvester/labels.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { expireRancherToken } from '../sandbox/rancher/tokens.js';
import type { RemovalPreview } from '../src/cli/removal-preview.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { livePvcs, vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from './support/volumes.js';
import { CliRunner, MACHINE_FLAGS, kubeconfigFile, tempDir } from './cli-harness.js';

const fixture = useSandbox();
const dir = tempDir('hm-cli-rm-');
const cli = new CliRunner(path.join(dir, 'store'));
const ns = 'default';
const names = (items: ReadonlyArray<{ name: string }>): string[] => items.map((i) => i.name).sort();

async function liveSecrets(): Promise<Set<string>> {
  const list = await fixture.sandbox.harvester.admin.list<KubeObject>(Resources.secret, { namespace: ns });
  return new Set(list.items.filter((s) => !s.metadata.deletionTimestamp).map((s) => s.metadata.name));
}

async function waitSecretGone(name: string): Promise<void> {
  await waitFor(fixture.sandbox.harvester.admin, {
    type: Resources.secret,
    namespace: ns,
    name,
    description: `Secret ${ns}/${name} to be deleted`,
    timeoutMs: 30_000,
    until: (o) => o === undefined,
  });
}

/** A machine of `cluster` with a cloud-init Secret, two hot-plugged volumes and an unattached labelled one. */
async function guestMachine(
  cluster: string,
  name: string,
): Promise<{ boot: string[]; hotplugged: string[]; unattached: string }> {
  const { sandbox } = fixture;
  const kubeconfig = kubeconfigFile(dir, 'via-rancher', sandbox.kubeconfigs.harvesterViaRancher);
  await cli.expect(0, [
    'create',
    name,
    '--kubeconfig',
    kubeconfig,
    `--harvester-cluster-name=${cluster}`,
    '--harvester-cloud-init-in-secret',
    ...MACHINE_FLAGS,
  ]);
  const { admin } = sandbox.harvester;
  const boot = await vmPvcNames(admin, ns, name);
  for (const disk of boot) await waitPvcExists(admin, ns, disk);
  const hotplugged = [
    await recordedVolume(sandbox.standIns.csi, admin, { namespace: ns, cluster: cluster, size: '1Gi' }),
    await sandbox.standIns.csi.createVolume({ namespace: ns, size: '2Gi' }),
  ];
  for (const pvcName of hotplugged)
    await sandbox.standIns.csi.hotplug({ namespace: ns, vmName: name, pvcName });
  const unattached = await recordedVolume(sandbox.standIns.csi, admin, {
    namespace: ns,
    cluster: cluster,
    size: '1Gi',
  });
  return { boot, hotplugged, unattached };
}

describe('rm --dry-run against rm', () => {
  it('previews a whole-cluster removal exactly: every volume of the cluster, the VM and its Secret go', async () => {
    const { admin } = fixture.sandbox.harvester;
    const a = await guestMachine('rm-whole', 'rm-whole-pool1-5d6e7-aa01');
    const b = await guestMachine('rm-other', 'rm-other-pool1-5d6e7-bb01');
    const vm = 'rm-whole-pool1-5d6e7-aa01';

    // The plain preview keeps the hot-plugged volumes; --whole-cluster adds them and the labelled one.
    const plain = (await cli.expect(0, ['rm', '--dry-run', vm, '-o', 'json'])).json<RemovalPreview>();
    assert.equal(plain.wholeCluster, false);
    assert.deepEqual(names(plain.delete.persistentVolumeClaims), [...a.boot].sort());
    assert.deepEqual(names(plain.keep.persistentVolumeClaims), [...a.hotplugged].sort());
    const whole = (
      await cli.expect(0, ['plan', 'rm', vm, '--whole-cluster', '-o', 'json'])
    ).json<RemovalPreview>();
    assert.equal(whole.wholeCluster, true);
    assert.equal(whole.wholeClusterAssumed, true);
    assert.deepEqual(
      names(whole.delete.persistentVolumeClaims),
      [...a.boot, ...a.hotplugged, a.unattached].sort(),
    );
    assert.deepEqual(
      whole.delete.virtualMachines.map((v) => `${v.namespace}/${v.name}`),
      [`${ns}/${vm}`],
    );
    assert.deepEqual(names(whole.delete.secrets), [`${vm}-cloudinit`]);
    assert.deepEqual(whole.keep.persistentVolumeClaims, []);
    for (const item of [
      ...whole.delete.persistentVolumeClaims,
      ...whole.delete.secrets,
      ...plain.keep.persistentVolumeClaims,
    ])
      assert.ok(item.reason.length > 10, `a reason for ${item.name}`);

    const text = (await cli.expect(0, ['rm', '--dry-run', '--whole-cluster', vm])).stdout;
    assert.match(
      text,
      /^Dry run: removing machine rm-whole-pool1-5d6e7-aa01 would\ndelete:\n {2}VirtualMachine default\/rm-whole/,
    );
    assert.match(
      text,
      new RegExp(
        `  PersistentVolumeClaim default/${a.unattached}\\n      why: labelled guestcluster\\.harvesterhci\\.io/name=rm-whole \\(the guest's PersistentVolume ${a.unattached} \\(claim default/data-\\w+\\) names it; recorded by harvester-machine-controller at \\S+ by its watch\\)`,
      ),
    );
    assert.match(text, /Nothing was changed\.\n$/);

    // The dry runs changed nothing.
    const current = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name: vm });
    assert.equal(current.metadata.annotations?.[ANNOTATION_REMOVED_PVCS], undefined);
    assert.equal(current.metadata.deletionTimestamp, undefined);

    // What Rancher does when the whole cluster is deleted, then the real removal.
    await admin.patch(
      Resources.virtualMachine,
      { namespace: ns, name: vm },
      { metadata: { annotations: { [ANNOTATION_REMOVE_ALL_PVCS]: 'true' } } },
    );
    const beforePvcs = await livePvcs(admin, ns);
    const beforeSecrets = await liveSecrets();
    await cli.expect(0, ['rm', '--yes', vm]);
    for (const pvc of whole.delete.persistentVolumeClaims) await waitPvcGone(admin, ns, pvc.name);
    for (const secret of whole.delete.secrets) await waitSecretGone(secret.name);
    const afterPvcs = await livePvcs(admin, ns);
    const afterSecrets = await liveSecrets();
    assert.deepEqual(
      [...beforePvcs].filter((p) => !afterPvcs.has(p)).sort(),
      names(whole.delete.persistentVolumeClaims),
      'exactly the previewed volumes are gone',
    );
    assert.deepEqual(
      [...beforeSecrets].filter((s) => !afterSecrets.has(s)).sort(),
      names(whole.delete.secrets),
      'exactly the previewed Secret is gone',
    );
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name: vm }), undefined);
    for (const pvc of [...b.boot, ...b.hotplugged, b.unattached])
      assert.ok(afterPvcs.has(pvc), `the other cluster's ${pvc} stays`);
  });

  it('previews a plain removal exactly: the boot disk and Secret go, the workload volumes stay', async () => {
    const { admin } = fixture.sandbox.harvester;
    const vm = 'rm-plain-pool1-8f9a0-cc01';
    const c = await guestMachine('rm-plain', vm);
    const plan = (await cli.expect(0, ['plan', 'rm', vm, '-o', 'json'])).json<RemovalPreview>();
    assert.deepEqual(names(plan.delete.persistentVolumeClaims), [...c.boot].sort());
    assert.deepEqual(names(plan.delete.secrets), [`${vm}-cloudinit`]);
    assert.deepEqual(names(plan.keep.persistentVolumeClaims), [...c.hotplugged].sort());

    const beforePvcs = await livePvcs(admin, ns);
    const beforeSecrets = await liveSecrets();
    await cli.expect(0, ['rm', '-y', vm]);
    for (const pvc of plan.delete.persistentVolumeClaims) await waitPvcGone(admin, ns, pvc.name);
    for (const secret of plan.delete.secrets) await waitSecretGone(secret.name);
    const afterPvcs = await livePvcs(admin, ns);
    const afterSecrets = await liveSecrets();
    assert.deepEqual(
      [...beforePvcs].filter((p) => !afterPvcs.has(p)).sort(),
      names(plan.delete.persistentVolumeClaims),
    );
    assert.deepEqual(
      [...beforeSecrets].filter((s) => !afterSecrets.has(s)).sort(),
      names(plan.delete.secrets),
    );
    for (const pvc of [...c.hotplugged, c.unattached])
      assert.ok(afterPvcs.has(pvc), `workload volume ${pvc} stays`);
  });

  it('previews a machine whose VM is already gone as deleting nothing', async () => {
    const { sandbox } = fixture;
    const vm = 'rm-gone-pool1-1a2b3-dd01';
    await cli.expect(0, [
      'create',
      vm,
      '--kubeconfig',
      kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect),
      ...MACHINE_FLAGS,
    ]);
    await sandbox.harvester.admin.delete(Resources.virtualMachine, { namespace: ns, name: vm });
    await waitFor(sandbox.harvester.admin, {
      type: Resources.virtualMachine,
      namespace: ns,
      name: vm,
      description: 'VM gone',
      timeoutMs: 30_000,
      until: (o) => o === undefined,
    });
    const preview = (await cli.expect(0, ['rm', '--dry-run', vm, '-o', 'json'])).json<RemovalPreview>();
    assert.equal(preview.vm.exists, false);
    assert.deepEqual(preview.delete, { virtualMachines: [], persistentVolumeClaims: [], secrets: [] });
    await cli.expect(0, ['rm', '-y', vm]);
  });
});

describe('an expired saved credential', () => {
  it('exits 5 with the renew advice and changes nothing; a fresh kubeconfig from the flag or the environment wins', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const token = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
    const vm = 'rm-cred-pool1-3c4d5-ee01';
    await cli.expect(0, [
      'create',
      vm,
      '--kubeconfig',
      kubeconfigFile(dir, 'short-lived', token.kubeconfig),
      '--harvester-cluster-name=rm-cred',
      ...MACHINE_FLAGS,
    ]);
    await expireRancherToken(sandbox.rancher.admin, token.name);

    const status = await cli.expect(5, ['status', vm]);
    assert.match(
      status.stderr,
      /^Error: Harvester credential rejected: get virtualmachines\.kubevirt\.io default\/rm-cred/,
    );
    assert.match(status.stderr, /User "system:unauthenticated"/);
    assert.match(
      status.stderr,
      new RegExp(`The credential is Rancher token ${token.name}, saved in the machine config`),
    );
    assert.match(status.stderr, /renew the Harvester cloud credential in Rancher/);
    const secret = token.token.split(':')[1] ?? 'never';
    assert.ok(!status.stderr.includes(secret), 'no token secret in the error');

    const ls = (await cli.expect(0, ['ls', '-o', 'json'])).json<
      Array<{ name: string; state: string; error: string | null }>
    >();
    const listed = ls.find((m) => m.name === vm);
    assert.equal(listed?.state, 'Error');
    assert.match(
      listed?.error ?? '',
      new RegExp(`^credential rejected: Rancher token ${token.name}; renew it`),
    );

    const rm = await cli.expect(5, ['rm', '--yes', vm]);
    assert.match(rm.stderr, /Nothing was changed on Harvester/);
    const untouched = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name: vm });
    assert.equal(untouched.metadata.deletionTimestamp, undefined);
    assert.equal(untouched.metadata.annotations?.[ANNOTATION_REMOVED_PVCS], undefined);

    const renewed = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
    const b64 = Buffer.from(renewed.kubeconfig).toString('base64');
    const fresh = await cli.expect(0, ['status', vm], { env: { HARVESTER_KUBECONFIG_CONTENT: b64 } });
    assert.equal(fresh.stdout, 'Running\n');
    const preview = (
      await cli.expect(0, [
        'rm',
        '--dry-run',
        vm,
        '-o',
        'json',
        '--kubeconfig',
        kubeconfigFile(dir, 'renewed', renewed.kubeconfig),
      ])
    ).json<RemovalPreview>();
    assert.equal(preview.vm.exists, true);
    await cli.expect(0, ['rm', '--yes', vm, `--harvester-kubeconfig-content=${b64}`]);
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name: vm }), undefined);
  });
});
