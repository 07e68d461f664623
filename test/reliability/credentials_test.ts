// Credentials in the middle of an operation, and on disk. A token that expires while a create
// waits, or between a removal's read and its write, or between its write and its delete,
// ends the operation with the credential error, which says what (if anything) the operation
// had already changed; what is on Harvester stays consistent, and a rerun with a renewed
// credential finishes. Files holding secrets are 0600 whatever the umask; the secrets the
// sandbox hands out are in the ledger the suite's secrets scan reads.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CredentialRejectedError } from '../../src/harvester-access/credential-error.js';
import { ANNOTATION_REMOVED_PVCS } from '../../src/harvester/labels.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { expireRancherToken } from '../../sandbox/rancher/tokens.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { tempStore } from '../support/machines.js';
import { LEDGER_ENV, recordOutput } from '../../sandbox/secret-ledger.js';
import { readLedger, LEDGER_FILE } from '../support/secret-scan.js';
import { vmPvcNames, waitPvcExists, waitPvcGone, recordedVolume } from '../support/volumes.js';
import {
  eventually,
  failureOf,
  livePvcUids,
  pauseHook,
  untilRejected,
  vmsOfMachine,
  watchedMachine,
} from './helpers.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';
const HOUR = 3_600_000;
const vmPath = (name: string): RegExp => new RegExp(`/virtualmachines/${name}$`);
const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('a token that expires in the middle of a create', () => {
  it('while it waits for the IP: the credential error says the VM was created; a rerun with a renewed one finishes', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const name = 'cr-create-pool1-a1b2c-x1';
    const user = await sandbox.newDirectUser({ expiresAt: new Date(Date.now() + HOUR) });
    sandbox.standIns.configure({ noIp: (vm) => vm.name === name });
    try {
      const spec = { name, storePath: store, clusterName: 'cr-c', flags: { 'harvester-ip-timeout': 120 } };
      const m = watchedMachine({ ...spec, kubeconfig: user.kubeconfig });
      let ended = false;
      const creating = failureOf(m.driver.create()).finally(() => (ended = true));
      await m.progressWhere((e) => /none with a usable address/.test(e.state));
      await user.setExpiry(new Date(Date.now() - 1_000));
      await untilRejected(user.kubeconfig);
      // The wait's open watch was authenticated before; its next request is not. The wait may
      // also have made that request by itself (its watch ended and it read again) and already
      // failed: then there is no watch left to cut, and the error below is the same.
      await eventually('the wait has a watch to cut, or has ended', () =>
        Promise.resolve(ended || sandbox.proxy.faults.dropWatches() >= 1),
      );
      const err = await creating;
      m.driver.close();

      assert.ok(err instanceof CredentialRejectedError, String(err));
      assert.equal(err.statusCode, 401);
      assert.match(err.message, new RegExp(`bootstrap token ${user.tokenId}, given with the create flags`));
      assert.match(err.message, new RegExp(`this operation had created VM default/${name}`));
      assert.doesNotMatch(err.message, /Nothing was changed/);
      assert.ok(!err.message.includes(user.token.split('.')[1] ?? '-'), 'no secret in the error');
      // Consistent: the one VM, not being deleted, with its boot volume.
      const vms = await vmsOfMachine(admin, ns, name);
      assert.equal(vms.length, 1);
      assert.equal(vms[0]?.metadata.deletionTimestamp, undefined);
      const boot = await vmPvcNames(admin, ns, name);
      for (const pvc of boot) await waitPvcExists(admin, ns, pvc);

      sandbox.standIns.configure({ noIp: () => false });
      const renewed = await sandbox.newDirectUser({ expiresAt: new Date(Date.now() + HOUR) });
      const again = watchedMachine({ ...spec, kubeconfig: renewed.kubeconfig });
      await again.driver.create();
      assert.match(again.driver.config.IPAddress, /^\d+\.\d+\.\d+\.\d+$/);
      const after = await vmsOfMachine(admin, ns, name);
      assert.deepEqual(
        after.map((v) => v.metadata.uid),
        vms.map((v) => v.metadata.uid),
        'the rerun finished the same VM',
      );
      await again.driver.remove();
      again.driver.close();
    } finally {
      sandbox.standIns.configure({ noIp: () => false });
    }
  });
});

describe('a Rancher token that expires in the middle of a removal', () => {
  /** A machine driven through Rancher's proxy with its own token, with a hot-plugged workload volume. */
  async function rancherMachine(name: string, cluster: string) {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const token = await sandbox.newRancherToken({ ttlMs: HOUR });
    const m = watchedMachine({ name, kubeconfig: token.kubeconfig, storePath: store, clusterName: cluster });
    await m.driver.create();
    const saved = m.driver.getConfigRaw();
    m.driver.close();
    const boot = await vmPvcNames(admin, ns, name);
    for (const pvc of boot) await waitPvcExists(admin, ns, pvc);
    const workload = await recordedVolume(sandbox.standIns.csi, sandbox.harvester.admin, {
      namespace: ns,
      cluster: cluster,
      size: '1Gi',
    });
    await sandbox.standIns.csi.hotplug({ namespace: ns, vmName: name, pvcName: workload });
    return { token, saved, boot, workload };
  }

  /** Rancher's rm with the renewed cloud credential in argv; then nothing of the machine but its workload volume. */
  async function removeWithRenewedToken(name: string, saved: Uint8Array, boot: string[], workload: string) {
    const { sandbox } = fixture;
    const renewed = await sandbox.newRancherToken({ ttlMs: HOUR });
    const m = watchedMachine({
      name,
      kubeconfig: '',
      storePath: store,
      savedConfig: saved,
      argv: [
        'rancher-machine',
        'rm',
        '-y',
        `--harvester-kubeconfig-content=${b64(renewed.kubeconfig)}`,
        name,
      ],
    });
    assert.equal(m.driver.credentialSource, 'argv');
    await m.driver.remove();
    m.driver.close();
    const { admin } = sandbox.harvester;
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined);
    for (const pvc of boot) await waitPvcGone(admin, ns, pvc);
    assert.ok((await livePvcUids(admin, ns)).has(workload), 'the hot-plugged workload volume stays');
  }

  it('between its read and its write: nothing changed, and the rerun with the renewed token removes it', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const name = 'cr-read-pool1-b2c3d-x1';
    const { token, saved, boot, workload } = await rancherMachine(name, 'cr-r');
    const hook = pauseHook();
    const m = watchedMachine({
      name,
      kubeconfig: '',
      storePath: store,
      savedConfig: saved,
      clientOptions: hook.options,
    });
    // The plan's write meets a transient 503; during its pause the token expires.
    sandbox.proxy.faults.inject({ method: 'PATCH', pathPattern: vmPath(name), status: 503, times: 1 });
    hook.arm(async () => void (await expireRancherToken(sandbox.rancher.admin, token.name)));
    const err = await failureOf(m.driver.remove());
    m.driver.close();
    assert.equal(hook.fired(), 1);
    assert.ok(err instanceof CredentialRejectedError, String(err));
    assert.equal(err.statusCode, 403);
    assert.match(err.message, /^Harvester credential rejected: patch virtualmachines\.kubevirt\.io /);
    assert.match(err.message, new RegExp(`Rancher token ${token.name}, saved in the machine config`));
    assert.match(err.message, /Nothing was changed on Harvester\./);
    const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(vm.metadata.deletionTimestamp, undefined, 'the VM is not being deleted');
    assert.equal(vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS], undefined, 'no plan was recorded');
    const live = await livePvcUids(admin, ns);
    for (const pvc of [...boot, workload]) assert.ok(live.has(pvc), `${pvc} untouched`);

    await removeWithRenewedToken(name, saved, boot, workload);
  });

  it('between its write and its delete: the error says the plan was recorded; the VM is intact; the rerun removes it', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const name = 'cr-write-pool1-c3d4e-x1';
    const { token, saved, boot, workload } = await rancherMachine(name, 'cr-w');
    const hook = pauseHook();
    const m = watchedMachine({
      name,
      kubeconfig: '',
      storePath: store,
      savedConfig: saved,
      clientOptions: hook.options,
    });
    sandbox.proxy.faults.inject({ method: 'DELETE', pathPattern: vmPath(name), status: 503, times: 1 });
    hook.arm(async () => void (await expireRancherToken(sandbox.rancher.admin, token.name)));
    const err = await failureOf(m.driver.remove());
    m.driver.close();
    assert.equal(hook.fired(), 1);
    assert.ok(err instanceof CredentialRejectedError, String(err));
    assert.match(err.message, /^Harvester credential rejected: delete virtualmachines\.kubevirt\.io /);
    assert.match(
      err.message,
      new RegExp(
        `this operation had annotated VM default/${name} \\(harvesterhci\\.io/removedPersistentVolumeClaims\\); running it again`,
      ),
    );
    assert.doesNotMatch(err.message, /Nothing was changed/);
    // Consistent: the VM stands, with the plan recorded on it (it only acts when the VM goes);
    // every volume is still there.
    const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name });
    assert.equal(vm.metadata.deletionTimestamp, undefined, 'the VM is not being deleted');
    assert.deepEqual(vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS]?.split(','), boot);
    const live = await livePvcUids(admin, ns);
    for (const pvc of [...boot, workload]) assert.ok(live.has(pvc), `${pvc} untouched`);

    await removeWithRenewedToken(name, saved, boot, workload);
  });
});

describe('secrets on disk and in the ledger', () => {
  it('the sandbox’s tokens and keys are in the secrets ledger the suite scans for', (t) => {
    const ledger = process.env[LEDGER_ENV];
    if (!ledger) {
      t.skip(`${LEDGER_ENV} is not set (scripts/test.sh sets it)`);
      return;
    }
    assert.equal(path.basename(ledger), LEDGER_FILE, 'the scan reads the ledger by this name');
    const { sandbox } = fixture;
    const recorded = new Map(readLedger(ledger).map((e) => [e.value, e.what]));
    assert.equal(recorded.get(sandbox.directUser.token), `bootstrap token ${sandbox.directUser.tokenId}`);
    assert.equal(recorded.get(sandbox.rancherToken.token), `Rancher token ${sandbox.rancherToken.name}`);
    assert.ok(recorded.has(sandbox.seeds.sshPrivateKeyPem));
    assert.equal(fs.statSync(ledger).mode & 0o077, 0, 'the ledger is readable by its owner only');
  });

  it('the driver writes the machine’s private key 0600 in a 0700 directory, even with umask 000', async () => {
    const { sandbox } = fixture;
    const name = 'cr-umask-pool1-d4e5f-x1';
    const storePath = fs.mkdtempSync(path.join(store, 'umask-'));
    const previous = process.umask(0);
    try {
      const m = watchedMachine({
        name,
        kubeconfig: sandbox.kubeconfigs.harvesterDirect,
        storePath,
        clusterName: 'cr-u',
      });
      await m.driver.create();
      const dir = path.join(storePath, 'machines', name);
      assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
      assert.equal(fs.statSync(path.join(dir, 'id_rsa')).mode & 0o777, 0o600);
      // The public key is public; it must not be writable by others either.
      assert.equal(fs.statSync(path.join(dir, 'id_rsa.pub')).mode & 0o022, 0);
      await m.driver.remove();
      m.driver.close();
    } finally {
      process.umask(previous);
    }
  });
});

/** The built operator CLI, when this tree has one (it keeps the machine store). */
const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

function runCli(args: string[], storeRoot: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: storeRoot,
        HARVESTER_MACHINE_STORE: storeRoot,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      recordOutput('harvester-machine stderr', stderr);
      resolve({ code: code ?? 1, stderr });
    });
  });
}

/** Every entry under `root` whose mode lets anyone but the owner in. */
function openToOthers(root: string): string[] {
  return fs.readdirSync(root, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const full = path.join(entry.parentPath, entry.name);
    const mode = fs.statSync(full).mode & 0o777;
    const wanted = entry.isDirectory() ? 0o700 : 0o600;
    return mode === wanted ? [] : [`${path.relative(root, full)} ${mode.toString(8)}`];
  });
}

describe('the operator CLI’s machine store', { skip: !fs.existsSync(CLI) && 'no CLI in this tree' }, () => {
  it('holds only 0600 files in 0700 directories with umask 000, after a create and after a failed one', async () => {
    const { sandbox } = fixture;
    const root = fs.mkdtempSync(path.join(store, 'cli-store-'));
    const kubeconfig = path.join(root, 'harvester.kubeconfig');
    fs.writeFileSync(kubeconfig, sandbox.kubeconfigs.harvesterDirect, { mode: 0o600 });
    const flags = [
      '--kubeconfig',
      kubeconfig,
      '--harvester-image-name=default/image-ubuntu',
      '--harvester-network-name=default/vlan1',
      '--harvester-disk-size=40',
      '--harvester-create-timeout=60',
    ];
    const ok = 'cr-cli-pool1-e5f6a-x1';
    const failed = 'cr-clifail-pool1-f6a7b-x1';
    sandbox.standIns.configure({ noIp: (vm) => vm.name === failed });
    const previous = process.umask(0);
    try {
      const created = await runCli(['create', ok, ...flags, '--harvester-ip-timeout=60'], root);
      assert.equal(created.code, 0, created.stderr);
      // The VM is made, then its IP never comes: the machine stays in the store for rm.
      const timedOut = await runCli(['create', failed, ...flags, '--harvester-ip-timeout=2'], root);
      assert.notEqual(timedOut.code, 0);
      assert.ok(fs.existsSync(path.join(root, 'machines', failed, 'config.json')), timedOut.stderr);
      assert.deepEqual(openToOthers(path.join(root, 'machines')), []);
    } finally {
      process.umask(previous);
      sandbox.standIns.configure({ noIp: () => false });
    }
    for (const name of [ok, failed]) assert.equal((await runCli(['rm', '-y', name], root)).code, 0);
  });
});
