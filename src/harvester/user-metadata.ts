// --harvester-vm-labels and --harvester-vm-annotations: the operator's own labels and
// annotations on a pool's VMs (harvester/harvester#8391). Labels go on the VM and on its
// template, so the VMI and the virt-launcher pod carry them too and a Harvester load
// balancer's selector finds the pool's VMs; annotations go on both alike. Keys in the
// domains the driver, Harvester, KubeVirt, Rancher and Kubernetes own, and those of the
// network plugins and security profiles that read a pod's keys, are refused: a user value
// would override theirs or steer the VM pod's network or confinement
// (docs/security.md#keys-refused-on-a-pools-vms).
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
 * The DNS domains of label and annotation keys the operator may not set, most specific
 * first, each with who reads it and what a value would change. A key's prefix in a domain
 * or any of its subdomains is refused (`k8s.v1.cni.cncf.io` is in `cni.cncf.io`), unless it
 * is in one of `allowed` (docs/security.md#keys-refused-on-a-pools-vms; the keys each
 * plugin reads: docs/upstream/pod-network-keys.md).
 */
export const REFUSED_KEY_DOMAINS: ReadonlyArray<{ domain: string; owner: string; allowed?: string[] }> = [
  {
    domain: 'harvesterhci.io',
    owner:
      "Harvester and the driver (harvesterhci.io: creator, vmName, machineSetName, the guest cluster and node pool, and Harvester's own)",
  },
  { domain: 'kubevirt.io', owner: 'KubeVirt (kubevirt.io)' },
  { domain: 'harvester-machine.io', owner: 'harvester-machine (harvester-machine.io)' },
  { domain: 'cattle.io', owner: 'Rancher (cattle.io)' },
  {
    domain: 'cni.cncf.io',
    owner:
      "Multus (cni.cncf.io, such as k8s.v1.cni.cncf.io/networks: which networks the VM's pod is attached to)",
  },
  {
    domain: 'multus-cni.io',
    owner: "Multus (multus-cni.io, such as v1.multus-cni.io/default-network: the VM pod's default network)",
  },
  {
    domain: 'ovn.kubernetes.io',
    owner: "Kube-OVN (ovn.kubernetes.io: the address, MAC and logical switch of the VM's pod)",
  },
  {
    domain: 'security.beta.kubernetes.io',
    owner:
      "Kubernetes' security profiles (security.beta.kubernetes.io: AppArmor, which confines the VM's pod)",
  },
  {
    domain: 'security.alpha.kubernetes.io',
    owner:
      "Kubernetes' security profiles (security.alpha.kubernetes.io: seccomp, which confines the VM's pod)",
  },
  {
    domain: 'kubernetes.io',
    owner:
      "Kubernetes and the plugins that take its domain (kubernetes.io and its subdomains but app.kubernetes.io: the VM pod's network and security settings among them)",
    allowed: ['app.kubernetes.io'],
  },
  {
    domain: 'k8s.io',
    owner: 'Kubernetes (k8s.io and its subdomains)',
  },
  { domain: 'ovn.org', owner: "OVN-Kubernetes (k8s.ovn.org: the VM pod's networks and addresses)" },
  {
    domain: 'projectcalico.org',
    owner:
      "Calico, which Harvester's Canal runs (cni.projectcalico.org: the VM pod's address and address pools)",
  },
];

/** Whether `domain` is `parent` or one of its subdomains. */
const inDomain = (domain: string, parent: string): boolean =>
  domain === parent || domain.endsWith(`.${parent}`);

/**
 * Who owns a key the operator may not set, or undefined: the key's prefix is in a domain of
 * REFUSED_KEY_DOMAINS. Their controllers and plugins read the keys on a VM, its VMI or its
 * virt-launcher pod (which carries the template's labels and annotations), so a user value
 * would override theirs or steer the pod's network or confinement.
 */
export function reservedKeyOwner(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return undefined;
  const domain = key.slice(0, slash).toLowerCase();
  for (const refused of REFUSED_KEY_DOMAINS) {
    if (!inDomain(domain, refused.domain)) continue;
    if (refused.allowed?.some((a) => inDomain(domain, a))) return undefined;
    return refused.owner;
  }
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
