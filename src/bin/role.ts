// Which of the three programs the single executable is this time. Rancher and
// rancher-machine know it only as docker-machine-driver-harvester: started under that
// name (argv[0]), or with rancher-machine's plugin environment whatever its name, it is the
// plugin, which then checks the token itself (a wrong one gets RegisterDriver's message).
// Otherwise `controller` selects the cleanup controller and anything else is the CLI.
export type Role = 'plugin' | 'controller' | 'cli';

/** rancher-machine's localbinary looks up `docker-machine-driver-<driver name>` on PATH. */
export const PLUGIN_NAME_PREFIX = 'docker-machine-driver-';
/** Set by rancher-machine for every plugin it launches (src/plugin/plugin-main.ts checks the value). */
export const PLUGIN_ENV = 'MACHINE_PLUGIN_TOKEN';
export const CONTROLLER_COMMAND = 'controller';

export function chooseRole(
  programName: string,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Role {
  if (programName.startsWith(PLUGIN_NAME_PREFIX) || env[PLUGIN_ENV] !== undefined) return 'plugin';
  if (args[0] === CONTROLLER_COMMAND) return 'controller';
  return 'cli';
}
