// The User-Agent every request carries. One process is one program (the plugin, the
// controller or the CLI), and client-go names its program in the User-Agent the same way, so
// an apiserver's audit log, a proxy's access log or an API Priority and Fairness flow schema
// can tell the cleanup controller's requests from the driver's even when both use the same
// cloud credential. Each entry point names its program once, before its first request.
const DEFAULT_PROGRAM = 'harvester-machine';
let program = DEFAULT_PROGRAM;

/** Names this process's program ("harvester-machine-controller", "docker-machine-driver-harvester"). */
export function setUserAgentProgram(name: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new Error(`setUserAgentProgram: "${name}" is not a program name (letters, digits, . _ -)`);
  program = name;
}

/** The header value: the program's name ("harvester-machine" unless an entry point said otherwise). */
export function userAgent(): string {
  return program;
}
