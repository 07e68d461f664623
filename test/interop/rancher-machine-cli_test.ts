// The real rancher-machine CLI driving our single-executable plugin against the sandbox,
// through the Rancher-path kubeconfig (…/k8s/clusters/<id>, a Rancher token):
// - a machine through its whole life with the flags Rancher's create job passes;
// - a whole-cluster removal (Rancher's annotation): every volume of that cluster goes,
//   another cluster's stay;
// - a config.json in the Go driver's format, removed with our plugin.
// After every command no plugin process may be left (MachineCli.expect checks it).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { ANNOTATION_REMOVE_ALL_PVCS, LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/harvester/types.js';
import type { KubeClient } from '../../src/kube/client.js';
import { redact } from '../../src/log/redact.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { newMachine } from '../support/machines.js';
import { livePvcs, vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from '../support/volumes.js';
import { useInterop } from './support/interop-fixture.js';
import { goDriverLines, phaseLines, pluginLines, unknownLines } from './support/job-log.js';
import {
  goDriverConfig,
  machineDir,
  provisionedHostOptions,
  readHostDocument,
  writeHostDocument,
} from './support/machine-store.js';
import {
  INSTALL_SCRIPT,
  poolConfig,
  rancherCreateArgs,
  rancherRemoveArgs,
} from '../../sandbox/rancher-machine/rancher-job.js';
import { rancherMachineSkipReason, type MachineCli } from '../../sandbox/rancher-machine/rancher-machine.js';

/**
 * What the command itself printed: plugin lines ("(<machine>) …", e.g. "Closing plugin on
 * server side", which the Go plugin prints too) are rancher-machine's forwarded logs.
 */
function ownOutput(run: { stdout: string }): string {
  return run.stdout
    .split('\n')
    .filter((l) => !/^\([^)]*\) /.test(l))
    .join('\n');
}

const NS = 'default';
const skip = rancherMachineSkipReason();

async function vmiAddress(admin: KubeClient, name: string): Promise<string | undefined> {
  const vmi = await admin.find<VirtualMachineInstance>(Resources.virtualMachineInstance, {
    namespace: NS,
    name,
  });
  return vmi?.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress;
}

/** The VM's cloud-init user data, inline or in the Secret it refers to. */
async function vmUserData(admin: KubeClient, name: string): Promise<string> {
  const vm = await admin.get<VirtualMachine>(Resources.virtualMachine, { namespace: NS, name });
  const source = (vm.spec.template.spec.volumes ?? []).find((v) => v.cloudInitNoCloud)?.cloudInitNoCloud;
  if (source?.userData) return source.userData;
  if (source?.userDataBase64) return Buffer.from(source.userDataBase64, 'base64').toString('utf8');
  const ref = source?.secretRef?.name;
  assert.ok(ref, `VM ${name} has no cloud-init user data`);
  const secret = await admin.get<KubeObject & { data?: Record<string, string> }>(Resources.secret, {
    namespace: NS,
    name: ref,
  });
  return Buffer.from(secret.data?.userdata ?? '', 'base64').toString('utf8');
}

/** The output's lines: rancher-machine's own and the plugin's ("(<machine>) …"), in order. */
function lines(output: string): string[] {
  return output.split('\n').filter((l) => l !== '');
}

/**
 * The job log of one command for one machine: the lines the Go driver prints, exactly and in
 * its order ("Closing plugin on server side" races the parent's exit, so it is left out), and
 * no plugin line of a form we do not know.
 */
function assertJobLog(stdout: string, machine: string, goLines: string[]): string[] {
  const lines = pluginLines(stdout, machine);
  assert.deepEqual(unknownLines(lines), [], `unknown plugin lines in:\n${lines.join('\n')}`);
  assert.deepEqual(
    goDriverLines(lines).filter((l) => l !== 'Closing plugin on server side'),
    goLines,
    `the Go driver's lines in:\n${lines.join('\n')}`,
  );
  return lines;
}

/** KubeVirt's phases in the order a starting VM instance goes through them. */
const START_PHASES = [
  'VM instance Pending',
  'VM instance Scheduling',
  'VM instance Scheduled',
  'VM instance Running',
];

/** The phase lines of a start: in KubeVirt's order, Scheduled and Running among them. */
function assertStartPhases(lines: string[]): void {
  const phases = phaseLines(lines).filter((p) => START_PHASES.includes(p));
  const order = phases.map((p) => START_PHASES.indexOf(p));
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
    `phases in KubeVirt's order: ${phases.join(', ')}`,
  );
  for (const p of ['VM instance Scheduled', 'VM instance Running'])
    assert.ok(phases.includes(p), `a line for ${p} in:\n${lines.join('\n')}`);
}

function assertInOrder(output: string, expected: Array<string | RegExp>): void {
  let from = 0;
  const all = lines(output);
  for (const want of expected) {
    const i = all.findIndex(
      (l, idx) => idx >= from && (typeof want === 'string' ? l === want : want.test(l)),
    );
    assert.ok(i >= 0, redact(`expected a line ${String(want)} after line ${from} in:\n${output}`));
    from = i + 1;
  }
}

describe('rancher-machine with our plugin executable', { timeout: 10 * 60_000 }, () => {
  // Skipping a whole suite counts no test as skipped in the summary: one test that says why.
  if (skip) {
    it('runs rancher-machine', { skip }, () => undefined);
    return;
  }
  const fixture = useSandbox();
  const interop = useInterop('hm-interop-cli');

  describe("one machine's life, with the flags Rancher's create job passes", () => {
    const instance = 'lifecycle-pool1-6d9f7c4b8-x2k9p';
    const cluster = 'lifecycle';
    let cli: MachineCli;
    let store = '';

    it('create -d harvester --custom-install-script … --harvester-cluster-name … creates the VM and saves the host', async () => {
      const { sandbox } = fixture;
      cli = interop.cli('lifecycle', {
        // The job's environment: the cloud credential's other keys.
        HARVESTER_CLUSTER_ID: sandbox.clusterId,
        HARVESTER_CLUSTER_TYPE: 'imported',
      });
      cli.freshHome();
      store = cli.storePath;
      const args = rancherCreateArgs({
        instance,
        clusterName: cluster,
        installScript: interop.installScript,
        config: {
          ...poolConfig(sandbox.seeds),
          'kubeconfig-content': sandbox.kubeconfigs.harvesterViaRancher,
        },
      });
      const run = await cli.expect(args);
      assertInOrder(run.stdout, [
        'Running pre-create checks...',
        'Creating machine...',
        'Waiting for machine to be running, this may take a few minutes...',
        'Custom install script was sent via userdata, provisioning complete...',
      ]);
      // Without --custom-install-script rancher-machine would provision over SSH; with it, never.
      assert.doesNotMatch(run.output, /Provisioning with|Waiting for SSH|error/i);
      assert.equal(interop.sshCalls().length, 0, 'no SSH during a Rancher create');

      const { admin } = sandbox.harvester;
      const vm = await admin.get<VirtualMachine>(Resources.virtualMachine, { namespace: NS, name: instance });
      assert.equal(vm.metadata.labels?.[LABEL_GUEST_CLUSTER_NAME], cluster);
      const ip = await vmiAddress(admin, instance);
      assert.ok(ip, 'the VM instance reports an IP');
      // The job log Rancher shows: the Go driver's lines, then what we add about the waits.
      const lines = assertJobLog(run.stdout, instance, [
        'Creating New SSH Key',
        `Using public Key: ${path.join(machineDir(store, instance), 'id_rsa')}.pub`,
        'Waiting for node become Running',
        'Waiting for node get ip',
        `Get machine ip: ${ip}`,
      ]);
      assert.ok(
        lines.some((l) => l.startsWith(`Creating VM ${NS}/${instance}`)),
        'the VM creation is in the log',
      );
      assertStartPhases(lines);
      const afterIpWait = lines.slice(lines.indexOf('Waiting for node get ip') + 1);
      assert.match(
        afterIpWait[0] ?? '',
        /^VM instance Running; 1 interface reported, none with a usable address; qemu-guest-agent not connected/,
      );

      const host = readHostDocument(store, instance);
      assert.equal(host.ConfigVersion, 3);
      assert.equal(host.DriverName, 'harvester');
      assert.equal(host.Name, instance);
      assert.equal(host.HostOptions.CustomInstallScript, interop.installScript);
      assert.equal(host.Driver.MachineName, instance);
      assert.equal(host.Driver.IPAddress, ip);
      assert.equal(host.Driver.ClusterName, cluster);
      assert.equal(host.Driver.ClusterID, sandbox.clusterId, 'HARVESTER_CLUSTER_ID from the environment');
      assert.equal(host.Driver.ClusterType, 'imported');
      assert.equal(host.Driver.VMNamespace, NS);
      assert.equal(host.Driver.CPU, 2);
      assert.equal(host.Driver.MemorySize, '4Gi');
      assert.equal(host.Driver.DiskSize, '40');
      assert.equal(host.Driver.SSHUser, 'ubuntu');
      assert.ok(host.Driver.KubeConfigContent, 'the kubeconfig is saved (rm needs it)');
      assert.equal(fs.statSync(path.join(machineDir(store, instance), 'config.json')).mode & 0o777, 0o600);

      // rancher-machine put the install script into the cloud-config it handed the driver
      // (--harvester-cloud-config <temp file>); the driver merged it with the pool's user data.
      const userData = parseYaml(await vmUserData(admin, instance)) as {
        hostname?: string;
        runcmd?: string[];
        packages?: string[];
        write_files?: Array<{ path: string; content: string; encoding: string }>;
      };
      assert.equal(userData.hostname, instance);
      assert.ok(
        userData.runcmd?.includes('sh /usr/local/custom_script/install.sh'),
        JSON.stringify(userData.runcmd),
      );
      assert.ok(userData.packages?.includes('qemu-guest-agent'), 'the pool user data is kept');
      const script = userData.write_files?.find((f) => f.path === '/usr/local/custom_script/install.sh');
      assert.equal(script?.encoding, 'gzip+b64');
      // rancher-machine drops the script's shebang line (it runs it with `sh`).
      assert.equal(
        gunzipSync(Buffer.from(script?.content ?? '', 'base64')).toString('utf8'),
        INSTALL_SCRIPT.replace(/^#!.*\n/, ''),
      );
    });

    it('ls, status, ip and url report the machine', async () => {
      const { admin } = fixture.sandbox.harvester;
      const ip = await vmiAddress(admin, instance);
      // `ls -q`: the full `ls` table panics inside rancher-machine (commands/ls.go:126
      // dereferences HostOptions.SwarmOptions, which create sets to nil whenever
      // --custom-install-script is given), whatever the driver. The table is checked on a
      // provisioned host's config.json below.
      assert.equal(ownOutput(await cli.expect(['ls', '-q'])), `${instance}\n`);
      assert.equal(ownOutput(await cli.expect(['status', instance])), 'Running\n');
      assert.equal(ownOutput(await cli.expect(['ip', instance])), `${ip}\n`);
      assert.equal(ownOutput(await cli.expect(['url', instance])), `tcp://${ip}:2376\n`);
    });

    it('stop, start and restart change the VM on Harvester and report its new state', async () => {
      const { admin } = fixture.sandbox.harvester;
      const stop = await cli.expect(['stop', instance]);
      assertInOrder(stop.stdout, [
        `Stopping "${instance}"...`,
        `(${instance}) Stop node`,
        `Machine "${instance}" was stopped.`,
      ]);
      assertJobLog(stop.stdout, instance, ['Stop node', 'Waiting for node become Stopped']);
      assert.equal(
        await admin.find(Resources.virtualMachineInstance, { namespace: NS, name: instance }),
        undefined,
      );
      assert.equal(ownOutput(await cli.expect(['status', instance])), 'Stopped\n');

      const start = await cli.expect(['start', instance]);
      assertInOrder(start.stdout, [
        `Starting "${instance}"...`,
        `(${instance}) Start node`,
        `Machine "${instance}" was started.`,
        'Waiting for SSH to be available...',
        'Detecting the provisioner...',
      ]);
      assertStartPhases(
        assertJobLog(start.stdout, instance, [
          'Start node',
          'Waiting for node become Running',
          'Waiting for node get ip',
        ]),
      );
      const startedIp = await vmiAddress(admin, instance);
      assert.ok(startedIp);
      assert.equal(ownOutput(await cli.expect(['status', instance])), 'Running\n');
      assert.equal(ownOutput(await cli.expect(['ip', instance])), `${startedIp}\n`);
      // What the plugin answered to GetSSHUsername/Hostname/Port/KeyPath, as ssh was called.
      const calls = interop.sshCalls();
      assert.ok(calls.length >= 3, `rancher-machine reached the guest over SSH (${calls.length} calls)`);
      for (const call of calls) {
        assert.equal(call.destination, `ubuntu@${startedIp}`);
        assert.equal(call.port, '22');
        assert.equal(call.identity, path.join(machineDir(store, instance), 'id_rsa'));
      }

      const uidBefore = (
        await admin.get<KubeObject>(Resources.virtualMachineInstance, { namespace: NS, name: instance })
      ).metadata.uid;
      const restart = await cli.expect(['restart', instance]);
      assertInOrder(restart.stdout, [
        `Restarting "${instance}"...`,
        `(${instance}) Restart node`,
        'Waiting for SSH to be available...',
      ]);
      assertStartPhases(
        assertJobLog(restart.stdout, instance, [
          'Restart node',
          'Waiting for node restarted',
          'Waiting for node become Running',
          'Waiting for node get ip',
        ]),
      );
      const after = await admin.get<KubeObject>(Resources.virtualMachineInstance, {
        namespace: NS,
        name: instance,
      });
      assert.notEqual(after.metadata.uid, uidBefore, 'a new VM instance');
      assert.equal(ownOutput(await cli.expect(['status', instance])), 'Running\n');
    });

    it('rm -y removes the VM and its boot disk, and the host from the store', async () => {
      const { admin } = fixture.sandbox.harvester;
      const disks = await vmPvcNames(admin, NS, instance);
      assert.equal(disks.length, 1);
      const rm = await cli.expect(['rm', '-y', instance]);
      assertInOrder(rm.stdout, [
        `About to remove ${instance}`,
        'WARNING: This action will delete both local reference and remote instance.',
        `(${instance}) Remove node`,
        `(${instance}) Waiting for node removed`,
        `Successfully removed ${instance}`,
      ]);
      assertJobLog(rm.stdout, instance, ['Remove node', 'Waiting for node removed']);
      assert.doesNotMatch(rm.output, /Force the removal/);
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: NS, name: instance }), undefined);
      for (const disk of disks) await waitPvcGone(admin, NS, disk);
      assert.equal(fs.existsSync(machineDir(store, instance)), false);
      assert.equal(ownOutput(await cli.expect(['ls', '-q'])), '');
      // Again: nothing to remove is not an error.
      const again = await cli.expect(['rm', '-y', instance]);
      assert.match(
        again.stdout,
        new RegExp(`Machine config for ${instance} does not exists, so nothing to do`),
      );
    });
  });

  describe('a whole-cluster removal (Rancher annotated the VM)', () => {
    interface GuestMachine {
      name: string;
      cluster: string;
      cli: MachineCli;
      boot: string[];
      /** Boot disk(s), the workload volumes and the unattached one. */
      volumes: string[];
    }

    /** A machine created through rancher-machine, then given the CSI driver's volumes:
     *  two hot-plugged workload volumes (one labelled with the cluster, one not, as the
     *  released CSI driver leaves them) and a labelled PVC attached to nothing. */
    async function guestMachine(cluster: string, name: string): Promise<GuestMachine> {
      const { sandbox } = fixture;
      const { admin } = sandbox.harvester;
      const env = { HARVESTER_KUBECONFIG_CONTENT: sandbox.kubeconfigs.harvesterViaRancher };
      const cli = interop.cli(`job-${name}`, env);
      cli.freshHome();
      await cli.expect(
        rancherCreateArgs({
          instance: name,
          clusterName: cluster,
          installScript: interop.installScript,
          config: poolConfig(sandbox.seeds),
        }),
      );
      const boot = await vmPvcNames(admin, NS, name);
      for (const disk of boot) await waitPvcExists(admin, NS, disk);
      const workload = [
        await recordedVolume(sandbox.standIns.csi, admin, { namespace: NS, cluster: cluster, size: '1Gi' }),
        await sandbox.standIns.csi.createVolume({ namespace: NS, size: '2Gi' }),
      ];
      for (const pvcName of workload)
        await sandbox.standIns.csi.hotplug({ namespace: NS, vmName: name, pvcName });
      const unattached = await recordedVolume(sandbox.standIns.csi, admin, {
        namespace: NS,
        cluster: cluster,
        size: '1Gi',
      });
      return { name, cluster, cli, boot, volumes: [...boot, ...workload, unattached] };
    }

    it('removes every volume of the deleted cluster and none of another cluster', async () => {
      const { admin } = fixture.sandbox.harvester;
      const doomed = await guestMachine('doomed', 'doomed-pool1-7f8d9c6b5-a1b2c');
      const other = await guestMachine('survivor', 'survivor-pool1-5c4b3a2d1-d3e4f');
      assert.equal(doomed.volumes.length, 4);

      // What Rancher's harvester-machine-provision-cleanup handler does (a full Update).
      const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: NS, name: doomed.name });
      vm.metadata.annotations = { ...vm.metadata.annotations, [ANNOTATION_REMOVE_ALL_PVCS]: 'true' };
      await admin.update(Resources.virtualMachine, vm);

      const rm = await doomed.cli.expect(rancherRemoveArgs({ instance: doomed.name }));
      assertInOrder(rm.stdout, [
        `(${doomed.name}) Remove node`,
        `(${doomed.name}) Force the removal of all persistent volume claims`,
        `(${doomed.name}) Waiting for node removed`,
        `Successfully removed ${doomed.name}`,
      ]);
      assertJobLog(rm.stdout, doomed.name, [
        'Remove node',
        'Force the removal of all persistent volume claims',
        'Waiting for node removed',
      ]);
      assert.equal(
        await admin.find(Resources.virtualMachine, { namespace: NS, name: doomed.name }),
        undefined,
      );
      for (const pvc of doomed.volumes) await waitPvcGone(admin, NS, pvc);
      let live = await livePvcs(admin, NS);
      for (const pvc of other.volumes) assert.ok(live.has(pvc), `the other cluster's volume ${pvc} stays`);

      // A plain removal of the other cluster's node (node replacement): only its boot disk goes.
      const rmOther = await other.cli.expect(rancherRemoveArgs({ instance: other.name }));
      assert.doesNotMatch(rmOther.output, /Force the removal/);
      for (const pvc of other.boot) await waitPvcGone(admin, NS, pvc);
      live = await livePvcs(admin, NS);
      for (const pvc of other.volumes.filter((v) => !other.boot.includes(v)))
        assert.ok(live.has(pvc), `workload volume ${pvc} survives a node replacement`);
    });
  });

  describe("a config.json in the Go driver's format", () => {
    it('is listed and removed by rancher-machine with our plugin', async () => {
      const { sandbox } = fixture;
      const { admin } = sandbox.harvester;
      const name = 'gocfg-pool1-58c4d7e6f-x7k2p';
      // The VM a Go-driver machine has on Harvester (made here by our driver in-process).
      const made = newMachine({
        name,
        kubeconfig: sandbox.kubeconfigs.harvesterViaRancher,
        storePath: path.join(interop.root, 'scratch'),
        clusterName: 'gocfg',
      });
      await made.driver.create();
      made.driver.close();
      const ip = made.driver.config.IPAddress;
      const boot = await vmPvcNames(admin, NS, name);

      const cli = interop.cli('gocfg');
      cli.freshHome();
      const store = cli.storePath;
      writeHostDocument(store, {
        ConfigVersion: 3,
        Driver: goDriverConfig({
          name,
          store,
          kubeconfig: sandbox.kubeconfigs.harvesterViaRancher,
          ip,
          clusterName: 'gocfg',
          namespace: NS,
          image: sandbox.seeds.image,
          network: sandbox.seeds.network,
        }),
        DriverName: 'harvester',
        HostOptions: provisionedHostOptions(store, name),
        Name: name,
      });

      const ls = await cli.expect(['ls', '--format', '{{.Name}}|{{.DriverName}}|{{.State}}|{{.URL}}']);
      assert.equal(ownOutput(ls), `${name}|harvester|Running|tcp://${ip}:2376\n`);
      assert.equal(ownOutput(await cli.expect(['status', name])), 'Running\n');
      assert.equal(ownOutput(await cli.expect(['ip', name])), `${ip}\n`);

      const rm = await cli.expect(['rm', '-y', name]);
      assertInOrder(rm.stdout, [
        `(${name}) Remove node`,
        `(${name}) Waiting for node removed`,
        `Successfully removed ${name}`,
      ]);
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: NS, name }), undefined);
      for (const pvc of boot) await waitPvcGone(admin, NS, pvc);
      assert.equal(fs.existsSync(machineDir(store, name)), false);
    });
  });
});
