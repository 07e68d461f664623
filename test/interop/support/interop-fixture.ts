// What every rancher-machine interop suite needs, set up inside its describe(): the two
// binaries (built once, cached), a temp root removed after the suite, a bin dir with our
// plugin executable and the guest's ssh stand-in, and rancher-machine runners per "job".
import fs from 'node:fs';
import path from 'node:path';
import { before } from 'node:test';
import { registerSecret } from '../../../src/log/redact.js';
import { installGuestSsh, guestSshCalls, type SshCall } from './guest-ssh.js';
import { installPlugin, pluginExecutable } from '../../../sandbox/rancher-machine/plugin-executable.js';
import { rancherMachineBinary } from '../../../sandbox/rancher-machine/rancher-machine.js';
import { INSTALL_SCRIPT } from '../../../sandbox/rancher-machine/rancher-job.js';
import { MachineCli } from './rancher-machine.js';
import { tempRoot } from './repo.js';

export interface InteropFixture {
  readonly root: string;
  readonly binDir: string;
  readonly pluginPath: string;
  /** Rancher's /run/secrets/machine/value. */
  readonly installScript: string;
  /** A runner whose HOME is <root>/<home> (the store is <root>/<home>/.docker/machine). */
  cli(home: string, env?: Record<string, string>): MachineCli;
  sshCalls(): SshCall[];
  /** A file (mode 0600) under the temp root, e.g. a kubeconfig for rancher-machine. */
  privateFile(name: string, content: string): string;
}

export function useInterop(prefix: string): InteropFixture {
  const temp = tempRoot(prefix);
  let rancherMachine = '';
  before(async () => {
    const [rm, plugin] = await Promise.all([rancherMachineBinary(), pluginExecutable()]);
    rancherMachine = rm;
    installPlugin(plugin, path.join(temp.dir, 'bin'));
    installGuestSsh(path.join(temp.dir, 'bin'), path.join(temp.dir, 'ssh-calls.log'));
    fs.writeFileSync(path.join(temp.dir, 'install.sh'), INSTALL_SCRIPT, { mode: 0o600 });
  });
  const fixture: InteropFixture = {
    get root() {
      return temp.dir;
    },
    get binDir() {
      return path.join(temp.dir, 'bin');
    },
    get pluginPath() {
      return path.join(temp.dir, 'bin', 'docker-machine-driver-harvester');
    },
    get installScript() {
      return path.join(temp.dir, 'install.sh');
    },
    cli(home, env = {}) {
      for (const [k, v] of Object.entries(env)) if (/KUBECONFIG_CONTENT/.test(k)) registerSecret(v);
      return new MachineCli({
        binary: rancherMachine,
        binDir: fixture.binDir,
        home: path.join(temp.dir, home),
        tmpDir: path.join(temp.dir, 'tmp'),
        env,
      });
    },
    sshCalls: () => guestSshCalls(path.join(temp.dir, 'ssh-calls.log')),
    privateFile(name, content) {
      const file = path.join(temp.dir, name);
      fs.writeFileSync(file, content, { mode: 0o600 });
      return file;
    },
  };
  return fixture;
}
