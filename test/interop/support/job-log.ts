// The job log Rancher shows for a machine: the plugin's lines as rancher-machine forwards
// them ("(<machine>) <line>"), split into the lines the Go driver prints too (its log
// calls, which its plugin forwards because RegisterDriver turns debug on) and ours.

/** Every line the Go driver's create, start, stop, restart and remove print (harvester/*.go). */
const GO_DRIVER_LINE =
  /^(?:Creating New SSH Key|Using public Key: .+|Using SSHPrivateKeyPath: .+|Using existing harvester key pair: .+|Waiting for node (?:become \w+|get ip|restarted|removed)|Get machine ip: .*|(?:Start|Stop|Restart|Remove) node|Force the removal of all persistent volume claims|Closing plugin on server side)$/;

/** The lines only we print: what a wait saw, how long it has waited, what we did. */
const OUR_LINE = [
  /^Creating VM [a-z0-9-]+\/[a-z0-9.-]+(?: \(cloud-init in Secret .+\))?$/,
  /^.+ \(after \d+ (?:ms|s|min(?: \d\d s)?)\)$/,
  /^Still waiting for .+ after .+: .+$/,
  /^VM [a-z0-9-]+\/[a-z0-9.-]+ is already gone$/,
];

/** The plugin lines of one machine in a command's output, without the "(<machine>) " prefix. */
export function pluginLines(stdout: string, machine: string): string[] {
  const prefix = `(${machine}) `;
  return stdout
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .map((l) => l.slice(prefix.length));
}

export function goDriverLines(lines: readonly string[]): string[] {
  return lines.filter((l) => GO_DRIVER_LINE.test(l));
}

/** Plugin lines that are neither the Go driver's nor one of our known forms (a stray debug line). */
export function unknownLines(lines: readonly string[]): string[] {
  return lines.filter((l) => !GO_DRIVER_LINE.test(l) && !OUR_LINE.some((re) => re.test(l)));
}

/** The phase lines of our waits ("VM instance Scheduling (after 120 ms)"), phase only. */
export function phaseLines(lines: readonly string[]): string[] {
  return lines
    .filter((l) => / \(after \d+ (?:ms|s|min(?: \d\d s)?)\)$/.test(l) && !l.startsWith('Still waiting'))
    .map((l) => l.replace(/ \(after [^)]*\)$/, '').replace(/; .*$/, ''));
}
