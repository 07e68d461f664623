// harvester-machine: the single executable's one entry point (scripts/build-executable.sh
// bundles this file). It is the operator CLI, the cleanup controller (`controller [flags]`)
// or the rancher-machine plugin; role.ts says which. A role's code is loaded only once it
// is chosen (esbuild keeps dynamically imported modules uninitialised until imported), so
// the plugin starts about as fast as when it was bundled alone.
// Under Node: `node dist/src/bin/harvester-machine.js <command>`.
import path from 'node:path';
import { chooseRole, type Role } from './role.js';

async function dispatch(role: Role): Promise<void> {
  switch (role) {
    case 'plugin': {
      const { runHarvesterPlugin } = await import('../plugin/harvester-plugin.js');
      await runHarvesterPlugin();
      return;
    }
    case 'controller': {
      // Its flags follow `controller`: argv is [runtime, bundle, 'controller', flags…].
      const { runControllerProcess } = await import('../controller/process-main.js');
      await runControllerProcess(process.argv.slice(3));
      return;
    }
    case 'cli': {
      const { runCliProcess } = await import('../cli/process-main.js');
      await runCliProcess();
      return;
    }
  }
}

const role = chooseRole(path.basename(process.argv[1] ?? ''), process.argv.slice(2), process.env);
dispatch(role).catch((err: unknown) => {
  const program = role === 'controller' ? 'harvester-machine-controller' : 'harvester-machine';
  process.stderr.write(`${program}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
