// Rancher's own flow, with the real rancher-machine and our plugin executable: every job
// starts from an empty home and keeps the store in the `<m>-machine-state` Secret on
// Rancher's local cluster (--secret-namespace/--secret-name). rancher-machine reaches that
// cluster with --kubeconfig / $KUBECONFIG, else the pod's in-cluster config
// (libmachine/persist/secretstore.go NewSecretStore); here $KUBECONFIG points at the
// sandbox's Rancher, so the argv stays exactly the job's.
// The second seed (docs/upstream/seeds.md#second-report): the credential saved at create
// expires; the rm job gets the rotated one in HARVESTER_KUBECONFIG_CONTENT and must succeed;
// without it, it must fail with our
// credential error and change nothing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { ANNOTATION_REMOVED_PVCS } from '../../src/harvester/labels.js';
import type { VirtualMachineInstance } from '../../src/harvester/types.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { redact, registerSecret } from '../../src/log/redact.js';
import { expireRancherToken } from '../../sandbox/rancher/tokens.js';
import type { SandboxRancherToken } from '../../sandbox/sandbox.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { livePvcs, vmPvcNames, waitPvcGone } from '../support/volumes.js';
import { useInterop } from './support/interop-fixture.js';
import {
  archiveEntries,
  archiveFile,
  createMachineStateSecret,
  machineStateArchive,
  type HostDocument,
} from './support/machine-store.js';
import {
  poolConfig,
  rancherCreateArgs,
  rancherRemoveArgs,
  type SecretStoreRef,
} from '../../sandbox/rancher-machine/rancher-job.js';
import { untilRejected } from '../support/credentials.js';
import {
  describeRun,
  rancherMachineSkipReason,
  type MachineCli,
} from '../../sandbox/rancher-machine/rancher-machine.js';

const NS = 'default';
const skip = rancherMachineSkipReason();

describe(
  "Rancher's machine-provision jobs, store in the machine-state Secret",
  { timeout: 10 * 60_000 },
  () => {
    // Skipping a whole suite counts no test as skipped in the summary: one test that says why.
    if (skip) {
      it('runs rancher-machine', { skip }, () => undefined);
      return;
    }
    const fixture = useSandbox();
    const interop = useInterop('hm-interop-rancher');
    const instance = 'rotated-pool1-4f5e6d7c8-m9n8b';
    const secretStore: SecretStoreRef = { namespace: 'fleet-default', name: `${instance}-machine-state` };
    let job: MachineCli;
    let credential: SandboxRancherToken;
    let bootDisks: string[] = [];

    /** The host as the Secret holds it: the config.json entry under the job's store. */
    async function savedHost(): Promise<HostDocument | undefined> {
      const archive = await machineStateArchive(
        fixture.sandbox.rancher.admin,
        secretStore.namespace,
        secretStore.name,
      );
      if (!archive) return undefined;
      const entry = archiveEntries(archive).find((e) => e.endsWith(`/machines/${instance}/config.json`));
      return entry ? (JSON.parse(archiveFile(archive, entry)) as HostDocument) : undefined;
    }

    async function assertVmUntouched(): Promise<void> {
      const { admin } = fixture.sandbox.harvester;
      const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: NS, name: instance });
      assert.equal(vm.metadata.deletionTimestamp, undefined, 'the VM is not being deleted');
      assert.equal(
        vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS],
        undefined,
        'nothing was recorded on the VM',
      );
      const live = await livePvcs(admin, NS);
      for (const disk of bootDisks) assert.ok(live.has(disk), `boot disk ${disk} untouched`);
    }

    it('create (a fresh pod: empty home) saves the machine into the Secret', async () => {
      const { sandbox } = fixture;
      // The pool's cloud credential: a Rancher kubeconfig token of its own, so it can expire.
      credential = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
      registerSecret(credential.kubeconfig);
      await createMachineStateSecret(sandbox.rancher.admin, secretStore.namespace, secretStore.name);
      job = interop.cli('home-machine', {
        KUBECONFIG: interop.privateFile('rancher-local.kubeconfig', sandbox.kubeconfigs.rancherLocal),
        HARVESTER_CLUSTER_ID: sandbox.clusterId,
        HARVESTER_CLUSTER_TYPE: 'imported',
      });
      job.freshHome();
      await job.expect(
        rancherCreateArgs({
          instance,
          clusterName: 'rotated',
          installScript: interop.installScript,
          config: poolConfig(sandbox.seeds),
          secretStore,
        }),
        { env: { HARVESTER_KUBECONFIG_CONTENT: credential.kubeconfig } },
      );

      const archive = await machineStateArchive(
        sandbox.rancher.admin,
        secretStore.namespace,
        secretStore.name,
      );
      assert.ok(archive, 'rancher-machine saved the store into the Secret');
      const dir = `${job.storePath}/machines/${instance}`;
      const entries = archiveEntries(archive);
      for (const file of ['config.json', 'id_rsa', 'id_rsa.pub'])
        assert.ok(
          entries.includes(`${dir}/${file}`),
          `${file} in the Secret (entries: ${entries.join(', ')})`,
        );
      const host = await savedHost();
      const vmi = await sandbox.harvester.admin.get<VirtualMachineInstance>(
        Resources.virtualMachineInstance,
        {
          namespace: NS,
          name: instance,
        },
      );
      assert.equal(host?.DriverName, 'harvester');
      assert.equal(host?.Driver.IPAddress, vmi.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress);
      assert.ok(
        host?.Driver.KubeConfigContent === credential.kubeconfig,
        'the credential of the create job is saved',
      );
      bootDisks = await vmPvcNames(sandbox.harvester.admin, NS, instance);
      assert.equal(bootDisks.length, 1);
    });

    it('rm -y --update-config from an empty home fails with our credential error when the saved credential expired', async (t) => {
      const { sandbox } = fixture;
      await expireRancherToken(sandbox.rancher.admin, credential.name);
      await untilRejected(credential.kubeconfig);

      // Nobody renewed the cloud credential: the job's environment holds the same, expired one.
      // Then without it at all: the plugin falls back to the kubeconfig saved in config.json.
      const cases = [
        {
          env: { HARVESTER_KUBECONFIG_CONTENT: credential.kubeconfig },
          source: /from HARVESTER_KUBECONFIG_CONTENT/,
        },
        { env: {}, source: /saved in the machine config/ },
      ];
      for (const { env, source } of cases) {
        job.freshHome();
        const args = rancherRemoveArgs({ instance, secretStore });
        const rm = await job.expect(args, { env, expectCode: 1 });
        const why = (problem: string): string => describeRun(args, rm, problem);
        assert.match(
          rm.output,
          new RegExp(`Error removing host "${instance}": Harvester credential rejected: `),
          why('no credential error'),
        );
        assert.match(
          rm.output,
          new RegExp(
            `clusters\\.management\\.cattle\\.io "${sandbox.clusterId}" is forbidden: User "system:unauthenticated" cannot get resource "clusters"`,
          ),
          why('not the Rancher proxy denial'),
        );
        assert.match(
          rm.output,
          new RegExp(`Rancher token ${credential.name}`),
          why('the token is not named'),
        );
        assert.match(rm.output, source, why('the credential source is not named'));
        assert.match(rm.output, /Nothing was changed on Harvester/, why('does not say nothing changed'));
        assert.match(
          rm.output,
          /renew the Harvester cloud credential in Rancher/,
          why('does not say what to do'),
        );
        assert.doesNotMatch(rm.output, /Successfully removed|does not exists/, why('claims success'));
        assert.doesNotMatch(
          rm.output,
          new RegExp(credential.token.split(':')[1] ?? 'never'),
          'no token secret in the output',
        );
        await assertVmUntouched();
        assert.ok(await savedHost(), 'the Secret still holds the machine (Rancher retries the job)');
        // What the operator sees in Rancher (the job's output), for the record.
        t.diagnostic(redact(rm.stderr.trim()));
      }
    });

    it('rm -y --update-config from an empty home removes the machine with the rotated credential in HARVESTER_KUBECONFIG_CONTENT', async () => {
      const { sandbox } = fixture;
      const { admin } = sandbox.harvester;
      // Renew in Rancher's UI: a new token for the same user, saved into the same credential.
      const rotated = await sandbox.newRancherToken({ ttlMs: 3_600_000, userId: credential.userId });
      registerSecret(rotated.kubeconfig);
      job.freshHome();
      assert.equal(fs.existsSync(job.storePath), false, 'the job starts without a store');
      const rm = await job.expect(rancherRemoveArgs({ instance, secretStore }), {
        env: { HARVESTER_KUBECONFIG_CONTENT: rotated.kubeconfig },
      });
      const lines = rm.stdout.split('\n');
      for (const want of [
        `(${instance}) Remove node`,
        `(${instance}) Waiting for node removed`,
        `Successfully removed ${instance}`,
      ])
        assert.ok(lines.includes(want), describeRun([], rm, `no line "${want}"`));
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: NS, name: instance }), undefined);
      for (const disk of bootDisks) await waitPvcGone(admin, NS, disk);
      assert.equal(await savedHost(), undefined, 'the machine is gone from the Secret');
    });
  },
);
