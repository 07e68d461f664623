// How Rancher turns a node driver's create flags into the fields of its machine config
// (HarvesterConfig, rke-machine-config.cattle.io/v1) and those fields back into the flags of
// rancher-machine's create job (docs/upstream/rancher.md#machine-config-fields-from-driver-flags
// and #provisioning-jobs). Pure: a flag is given by its name and kind, a machine config as the
// decoded object Rancher holds. Used to prove that every flag of ours reaches the driver
// under the name an operator writes in a HarvesterConfig.

export type DriverFlagKind = 'string' | 'int' | 'bool' | 'stringSlice';

/** The schema field type Rancher gives a flag: ints become strings (kept so for compatibility). */
export type RancherFieldType = 'string' | 'boolean' | 'array[string]';

/**
 * The field name: the flag name without the driver's prefix (everything up to the first
 * "-"), each later "-"-separated part with its first letter upper-cased:
 * harvester-io-thread-count -> ioThreadCount. Undefined for a name without a "-".
 */
export function rancherFieldName(flagName: string): string | undefined {
  const name = flagName.replace(/^-+/, '');
  const dash = name.indexOf('-');
  if (dash < 0) return undefined;
  const [first = '', ...rest] = name.slice(dash + 1).split('-');
  return first + rest.map((p) => p.slice(0, 1).toUpperCase() + p.slice(1)).join('');
}

export function rancherFieldType(kind: DriverFlagKind): RancherFieldType {
  return kind === 'bool' ? 'boolean' : kind === 'stringSlice' ? 'array[string]' : 'string';
}

/**
 * The flag a field is passed as: a hyphen before each upper-case letter that follows a
 * lower-case letter or digit, lower-cased, after `--<driver>-`.
 */
export function rancherFlagForField(driver: string, field: string): string {
  return `--${driver}-${field.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}`;
}

/**
 * Go's %v of a float64 (strconv.FormatFloat(f, 'g', -1, 64)): the shortest digits, in
 * exponent form when the exponent is below -4 or at least 6. So 4 is "4" but 4294967295
 * is "4.294967295e+09", which is why a number must reach Rancher as a string.
 */
export function goFloatText(value: number): string {
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : value < 0 ? '-Inf' : 'NaN';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const [mantissa = '', expText = '0'] = value.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(value);
}

/**
 * The create job's driver arguments for a machine's spec, as Rancher's toArgs renders them:
 * providerID and nulls skipped; a string as --flag=value unless empty; a number as
 * --flag=<Go %v>; true as the bare flag, false left out; each string of a list as its own
 * --flag=value; anything else (objects such as `common`) left out; then
 * --<driver>-cluster-name=<cluster> for Harvester; the whole list sorted.
 */
export function rancherDriverArgs(
  driver: string,
  spec: Readonly<Record<string, unknown>>,
  clusterName: string,
): string[] {
  const args: string[] = [];
  for (const [field, value] of Object.entries(spec)) {
    if (field === 'providerID' || value === null || value === undefined) continue;
    const flag = rancherFlagForField(driver, field);
    if (typeof value === 'string') {
      if (value !== '') args.push(`${flag}=${value}`);
    } else if (typeof value === 'number') args.push(`${flag}=${goFloatText(value)}`);
    else if (typeof value === 'boolean') {
      if (value) args.push(flag);
    } else if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'string') args.push(`${flag}=${item}`);
    }
  }
  if (driver === 'harvester') args.push(`--harvester-cluster-name=${clusterName}`);
  // Go's sort.Strings: byte order (the same as code-unit order for these ASCII names).
  return args.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** What the machine's spec carries of a HarvesterConfig: the fields of the driver's schema only. */
export function machineSpecFromConfig(
  config: Readonly<Record<string, unknown>>,
  schemaFields: ReadonlySet<string>,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).filter(([field]) => schemaFields.has(field)));
}
