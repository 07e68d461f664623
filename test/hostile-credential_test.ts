// A hostile cloud credential at the three places one enters: the cleanup controller (which
// probes every Harvester credential Secret it sees), the driver (the kubeconfig content in
// rancher-machine's argv, the environment or the saved config) and `doctor --cloud-credential`
// (which reads the Secret from Rancher's real apiserver). The credential points everything at
// tripwires: a loopback server that counts connections (server, proxy, OIDC issuer), files
// whose atime any read moves, a command that leaves a marker when run. Each is refused, the
// refusal names every hostile field and what a Rancher-made credential looks like, and no
// tripwire fires: nothing sent, nothing read, nothing run. First the attack the security
// review reproduced on main (token-file naming the ServiceAccount token, server the
// attacker's), then fast-check over every field that names a file, a command or a proxy,
// as client-go and client-node spell them and in other letter cases, with unicode and huge values around them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/program.js';
import { CleanupController } from '../src/controller/controller.js';
import { ConfigError } from '../src/driver/config/index.js';
import { HarvesterDriver } from '../src/driver/harvester-driver.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { setTripwires, type Tripwires } from '../src/kube/testing/tripwires.js';
import { silentLogger } from '../src/log/logger.js';
import { CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_KUBECONFIG } from '../src/rancher/cloud-credential.js';
import { useControlPlane } from './support/control-plane-fixture.js';
import { eventuallyValue } from './support/eventually.js';
import { hostileKubeconfig, type HostileKubeconfig } from './support/hostile-kubeconfigs.js';

const CREDENTIALS = 'cattle-global-data';
const RULE = 'as the ones Rancher makes do';
/** Runs per entry point: each is a Secret or a driver and a check of every tripwire. */
const RUNS = 25;

const fixture = useControlPlane({ name: 'rancher', crds: 'rancher' });
let wires: Tripwires;
let controller: CleanupController | undefined;
let dir = '';
let secrets = 0;

describe('a hostile cloud credential', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    wires = await setTripwires();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-hostile-'));
    const admin = fixture.cp.admin;
    await admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: CREDENTIALS },
    });
    controller = new CleanupController({
      client: admin,
      logger: silentLogger,
      config: {
        namespaces: ['fleet-default'],
        credentialNamespace: CREDENTIALS,
        hookName: 'harvester-machine-cleanup',
        gateDeadlineMs: 600_000,
        probeIntervalMs: 600_000,
        expiringSoonMs: 0,
        statusConfigMap: { namespace: 'default', name: 'hostile-status' },
        identity: 'hostile-test',
      },
    });
    await controller.start();
  });
  after(async () => {
    await controller?.stop();
    await wires?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function assertNothingHappened(): void {
    assert.equal(wires.connections(), 0, 'a connection reached the tripwire server');
    assert.deepEqual(wires.readFiles(), [], 'a tripwire file was read');
    assert.equal(wires.ran(), false, 'a tripwire command ran');
  }

  function assertNames(message: string, k: HostileKubeconfig): void {
    for (const field of k.fields)
      assert.ok(message.includes(field), `"${field}" not named in: ${message.slice(0, 600)}`);
    assert.ok(message.includes(RULE), message.slice(0, 600));
    // Bounded: none of the content's own (possibly huge) text is quoted.
    assert.ok(message.length < 2_000, `a message of ${message.length} characters`);
  }

  async function saveCredential(text: string): Promise<string> {
    const name = `cc-hostile-${++secrets}`;
    await fixture.cp.admin.create(Resources.secret, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: CREDENTIALS },
      type: 'provisioning.cattle.io/cloud-credential',
      data: {
        [CREDENTIAL_KEY_KUBECONFIG]: Buffer.from(text).toString('base64'),
        [CREDENTIAL_KEY_CLUSTER_ID]: Buffer.from('c-m-hostile').toString('base64'),
      },
    } as KubeObject);
    return name;
  }

  /** The controller's state for the credential once it has judged it. */
  async function controllerVerdict(name: string): Promise<{ state: string; problem: string }> {
    const record = await eventuallyValue(
      `the controller's record of ${name}`,
      () => Promise.resolve(controller?.monitor.records.get(`${CREDENTIALS}/${name}`)),
      (r) => r !== undefined && r.health.state !== 'unknown',
      20_000,
    );
    return { state: record?.health.state ?? '', problem: record?.problem ?? '' };
  }

  /** The driver as rancher-machine drives it, with the content in argv, the environment or config.json. */
  async function driverRefusal(text: string, channel: 'argv' | 'env' | 'saved' | 'flags'): Promise<string> {
    const driver = new HarvesterDriver({
      argv: channel === 'argv' ? ['rancher-machine', 'rm', '--harvester-kubeconfig-content', text] : [],
      env: channel === 'env' ? { HARVESTER_KUBECONFIG_CONTENT: text } : {},
      logger: silentLogger,
    });
    try {
      const saved = {
        MachineName: 'hostile-1',
        VMNamespace: 'default',
        ...(channel === 'saved' ? { KubeConfigContent: text } : {}),
      };
      driver.setConfigRaw(Buffer.from(JSON.stringify(saved)));
      if (channel === 'flags') {
        const refused = (() => {
          try {
            driver.setConfigFromFlags(
              new Map([
                ['harvester-kubeconfig-content', text],
                ['harvester-vm-namespace', 'default'],
              ]),
            );
          } catch (err) {
            return err;
          }
          return undefined;
        })();
        assert.ok(refused instanceof ConfigError, String(refused));
        return refused.message;
      }
      const err = await driver.getState().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ConfigError, String(err));
      assert.match(err.message, /--harvester-kubeconfig-content: the kubeconfig /);
      return err.message;
    } finally {
      driver.close();
    }
  }

  async function doctorRun(name: string): Promise<{ code: number; out: string }> {
    const rancher = path.join(dir, 'rancher.kubeconfig');
    fs.writeFileSync(rancher, fixture.cp.adminKubeconfig, { mode: 0o600 });
    let out = '';
    const sink = { write: (t: string) => ((out += t), true) };
    const code = await runCli({
      stdout: sink,
      stderr: sink,
      stdin: process.stdin,
      env: { PATH: process.env.PATH ?? '' },
      argv: [
        'node',
        'harvester-machine',
        'doctor',
        '--cloud-credential',
        `${CREDENTIALS}:${name}`,
        '--rancher-kubeconfig',
        rancher,
      ],
    });
    return { code, out };
  }

  describe('the attack the review reproduced: token-file names the ServiceAccount token, server the attacker', () => {
    const attack = (): HostileKubeconfig => ({
      text: stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'h', cluster: { server: wires.url, 'insecure-skip-tls-verify': true } }],
        // The tripwire token file stands in for /var/run/secrets/kubernetes.io/serviceaccount/token.
        users: [{ name: 'h', user: { 'token-file': wires.files.token } }],
        contexts: [{ name: 'h', context: { cluster: 'h', user: 'h' } }],
        'current-context': 'h',
      }),
      fields: ['users[0].user.token-file'],
    });

    it('the controller marks it invalid, with an Event naming the field, and sends nothing', async () => {
      const name = await saveCredential(attack().text);
      const verdict = await controllerVerdict(name);
      assert.equal(verdict.state, 'invalid');
      assertNames(verdict.problem, attack());
      const events = await eventuallyValue(
        `the HarvesterCredentialInvalid Event on ${name}`,
        async () =>
          (
            await fixture.cp.admin.list<
              KubeObject & { message?: string; involvedObject?: { name?: string } }
            >(Resources.event, { namespace: CREDENTIALS, fieldSelector: 'reason=HarvesterCredentialInvalid' })
          ).items.filter((e) => e.involvedObject?.name === name),
        (list) => list.length > 0,
      );
      assert.match(events[0]?.message ?? '', /users\[0\]\.user\.token-file names a file to read/);
      assertNothingHappened();
    });

    it('the driver refuses it from argv, the environment, config.json and its flags, naming the flag and the field', async () => {
      for (const channel of ['argv', 'env', 'saved', 'flags'] as const)
        assertNames(await driverRefusal(attack().text, channel), attack());
      assertNothingHappened();
    });

    it('doctor --cloud-credential fails the kubeconfig check naming the field', async () => {
      const name = await saveCredential(attack().text);
      const { code, out } = await doctorRun(name);
      assert.notEqual(code, 0);
      assert.match(out, /FAIL kubeconfig: kubeconfig users\[0\]\.user\.token-file names a file to read/);
      assertNothingHappened();
    });
  });

  describe('hostile credentials, property-tested (fast-check)', () => {
    const fits = (k: HostileKubeconfig): boolean => k.text.length < 700_000; // a Secret holds 1 MiB

    it('the controller: every one invalid, every field named, no tripwire', async () => {
      await fc.assert(
        fc.asyncProperty(hostileKubeconfig(wires).filter(fits), async (k) => {
          const verdict = await controllerVerdict(await saveCredential(k.text));
          assert.equal(verdict.state, 'invalid');
          assertNames(verdict.problem, k);
          assertNothingHappened();
        }),
        { numRuns: RUNS },
      );
    });

    it('the driver: refused from any channel, every field named, no tripwire', async () => {
      await fc.assert(
        fc.asyncProperty(
          hostileKubeconfig(wires),
          fc.constantFrom('argv', 'env', 'saved', 'flags' as const),
          async (k, channel) => {
            assertNames(await driverRefusal(k.text, channel), k);
            assertNothingHappened();
          },
        ),
        { numRuns: RUNS },
      );
    });

    it('doctor --cloud-credential: the kubeconfig check fails naming every field, no tripwire', async () => {
      await fc.assert(
        fc.asyncProperty(hostileKubeconfig(wires).filter(fits), async (k) => {
          const { code, out } = await doctorRun(await saveCredential(k.text));
          assert.notEqual(code, 0);
          assert.match(out, /FAIL kubeconfig: kubeconfig /);
          assertNames(out.split('\n').find((l) => l.startsWith('FAIL kubeconfig')) ?? '', k);
          assertNothingHappened();
        }),
        { numRuns: RUNS },
      );
    });
  });
});
