// --harvester-vm-labels and --harvester-vm-annotations: the operator's own labels and
// annotations on a pool's VMs (harvester/harvester#8391). Labels go on the VM and on its
// template, so the VMI and the virt-launcher pod carry them too and a Harvester load
// balancer's selector finds the pool's VMs; annotations go on both alike. Keys in the
// domains the driver, Harvester, KubeVirt and Kubernetes own are refused: their controllers
// read them, and a user value would override theirs (docs/decisions/0017-vm-labels.md).
import { jsonProblem } from '../common/parse-problems.js';
import { isValidLabelValue } from './labels.js';

export type KeyValues = Record<string, string>;

/** What Kubernetes allows of all annotations of an object together (apimachinery's TotalAnnotationSizeLimitB). */
export const ANNOTATIONS_SIZE_LIMIT = 256 * 1024;

/**
 * `k=v,k2=v2` (the Go driver's unmerged PR #83 takes labels so) or a JSON object
 * `{"k":"v"}` (for annotation values holding commas or "="). Problems follow the flag name.
 */
export function parseKeyValues(text: string): { value?: KeyValues; problems: string[] } {
  const trimmed = text.trim();
  if (trimmed === '') return { value: {}, problems: [] };
  if (trimmed.startsWith('{')) {
    let raw: unknown;
    try {
      raw = JSON.parse(trimmed);
    } catch (err) {
      return { problems: [jsonProblem(err)] };
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      return { problems: ['must be a JSON object of strings like {"app":"web"}'] };
    const bad = Object.entries(raw).filter(([, v]) => typeof v !== 'string');
    if (bad.length > 0)
      return {
        problems: [
          `values must be strings (${bad.map(([k]) => `"${k}"`).join(', ')} ${bad.length > 1 ? 'are' : 'is'} not)`,
        ],
      };
    return { value: { ...(raw as KeyValues) }, problems: [] };
  }
  const value: KeyValues = {};
  const problems: string[] = [];
  trimmed.split(',').forEach((pair, i) => {
    const eq = pair.indexOf('=');
    const key = (eq >= 0 ? pair.slice(0, eq) : pair).trim();
    if (eq < 0 || key === '') {
      problems.push(`entry ${i + 1} "${pair.trim()}" is not key=value (entries are separated by commas)`);
      return;
    }
    if (key in value) problems.push(`key "${key}" is given twice`);
    value[key] = pair.slice(eq + 1).trim();
  });
  return problems.length > 0 ? { problems } : { value, problems };
}

const NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

/** Kubernetes' rule for label and annotation keys: an optional DNS-subdomain prefix, "/", a name. */
function keyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !DNS_SUBDOMAIN.test(prefix))
    return 'has a prefix that is not a DNS subdomain (lowercase letters, digits, - and ., e.g. example.com/)';
  if (!NAME.test(name))
    return 'is not a valid key (at most 63 letters, digits, -, _ or ., starting and ending with a letter or digit, after an optional prefix/)';
  return undefined;
}

/**
 * Who owns a key the operator may not set, or undefined. The domains whose controllers read
 * the keys on a VM, its VMI or pod: the driver's and Rancher's (harvesterhci.io and its
 * subdomains, which Harvester owns too), KubeVirt's (kubevirt.io and subdomains), ours
 * (harvester-machine.io), and the ones Kubernetes reserves for itself (kubernetes.io, k8s.io;
 * their subdomains, such as app.kubernetes.io, are for everyone).
 */
export function reservedKeyOwner(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return undefined;
  const domain = key.slice(0, slash).toLowerCase();
  const inDomain = (d: string): boolean => domain === d || domain.endsWith(`.${d}`);
  if (inDomain('harvesterhci.io'))
    return "Harvester and the driver (harvesterhci.io: creator, vmName, machineSetName, the guest cluster and node pool, and Harvester's own)";
  if (inDomain('kubevirt.io')) return 'KubeVirt (kubevirt.io)';
  if (inDomain('harvester-machine.io')) return 'harvester-machine (harvester-machine.io)';
  if (domain === 'kubernetes.io' || domain === 'k8s.io')
    return 'Kubernetes (kubernetes.io/ and k8s.io/ are reserved for its core components)';
  if (inDomain('cattle.io')) return 'Rancher (cattle.io)';
  return undefined;
}

function keyProblems(values: KeyValues, what: 'label' | 'annotation'): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(values)) {
    const bad = keyProblem(key);
    if (bad) {
      problems.push(`${what} key "${key}" ${bad}`);
      continue;
    }
    const owner = reservedKeyOwner(key);
    if (owner) problems.push(`${what} key "${key}" is owned by ${owner}; the driver never overrides it`);
  }
  return problems;
}

export function vmLabelProblems(labels: KeyValues): string[] {
  const problems = keyProblems(labels, 'label');
  for (const [key, value] of Object.entries(labels)) {
    if (!isValidLabelValue(value))
      problems.push(
        `label "${key}" has the value "${value}", which is not a label value (at most 63 letters, digits, -, _ or ., starting and ending with a letter or digit); a selector would not find a changed one`,
      );
  }
  return problems;
}

export function vmAnnotationProblems(annotations: KeyValues): string[] {
  const problems = keyProblems(annotations, 'annotation');
  const bytes = Object.entries(annotations).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  if (bytes > ANNOTATIONS_SIZE_LIMIT)
    problems.push(
      `are ${bytes} bytes together; Kubernetes holds at most ${ANNOTATIONS_SIZE_LIMIT} bytes of annotations per object`,
    );
  return problems;
}

/** k=v,k2=v2 as the flag takes it back (for messages and the CLI), sorted by key. */
export function formatKeyValues(values: KeyValues): string {
  return Object.keys(values)
    .sort()
    .map((k) => `${k}=${values[k] ?? ''}`)
    .join(',');
}
