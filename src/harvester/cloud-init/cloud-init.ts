// Cloud-init for the VM: the user data the Go driver assembles (password block, SSH key,
// the user's --harvester-user-data, Rancher's install script merged on top) and where it
// goes (inline in the VM, or a Secret when it is too large for KubeVirt's inline limit).
//
// The merge follows the Go driver's (mergo.Map with WithAppendSlice, no override):
// maps are merged key by key, lists are appended (earlier document's entries first), and
// a scalar already set to a non-empty value is kept. It works on YAML nodes rather than
// plain values, so every value keeps the exact form its author wrote (0644 stays 0644,
// "yes" stays a string), which the Go driver's YAML→JSON→YAML trip does not.

import {
  Document,
  isMap,
  isNode,
  isScalar,
  isSeq,
  parseDocument,
  Pair,
  visit,
  YAMLMap,
  type Node,
} from 'yaml';
import { yamlProblem } from '../../common/parse-problems.js';
import { cloudInitSecretName } from '../names.js';
import type { CloudInitSource, ObjectMeta, Secret, VirtualMachine } from '../types.js';

export const CLOUD_CONFIG_HEADER = '#cloud-config\n';
export const JINJA_TEMPLATE_HEADER = '## template: jinja\n';
/** KubeVirt rejects inline userData/networkData over 2048 bytes. */
export const CLOUD_INIT_INLINE_LIMIT_BYTES = 2048;

/** Cloud-init content that cannot be assembled; the message quotes none of it. */
export class CloudInitError extends Error {
  /** @param problem what is wrong, as a phrase that follows the name of the content ("is not valid YAML (…)") */
  constructor(
    what: string,
    readonly problem: string,
  ) {
    super(`${what} ${problem}`);
    this.name = 'CloudInitError';
  }
}

// Duplicate keys are allowed, the last one winning, as in the Go driver's parser (yaml.v2,
// not strict) and in cloud-init's (PyYAML). Integers stay exact however large (PyYAML's are;
// the Go driver's JSON round trip turns big ones into floats).
const YAML_OPTIONS = { version: '1.1', uniqueKeys: false, intAsBigInt: true } as const;
// Block lists at the key's indentation, no line folding: the layout of the Go driver's output.
const TO_STRING = { indentSeq: false, lineWidth: 0 } as const;

/** Parses a #cloud-config document into a map of nodes with aliases expanded and comments dropped. */
function parseCloudConfigMap(text: string, what: string): YAMLMap {
  // cloud-init reads YAML 1.1 (PyYAML), and so did the Go driver.
  const doc = parseDocument(text, YAML_OPTIONS);
  const firstError = doc.errors[0];
  if (firstError) throw new CloudInitError(what, yamlProblem(firstError));
  // Nodes move between documents in the merge, so no alias may point back into this one.
  visit(doc, {
    Alias: (_key, alias) => {
      const target = alias.resolve(doc);
      return target ? (target.clone() as Node) : undefined;
    },
  });
  // A mapping or list as a key is what an unquoted Jinja expression parses to; merged, it
  // would come out as YAML that is no longer the template (the Go driver's merge fails on it).
  visit(doc, {
    Pair: (_key, pair) => {
      if (isMap(pair.key) || isSeq(pair.key)) {
        throw new CloudInitError(
          what,
          "has a mapping or a list as a key (an unquoted Jinja {{ … }}?); quote the expression, e.g. hostname: '{{ ds.meta_data.local_hostname }}'",
        );
      }
    },
  });
  visit(doc, { Map: (_key, map) => void collapseDuplicateKeys(map) });
  visit(doc, {
    Node: (_key, node) => {
      node.anchor = undefined;
      node.comment = undefined;
      node.commentBefore = undefined;
    },
  });
  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return new YAMLMap();
  if (!isMap(contents)) throw new CloudInitError(what, 'must be a YAML mapping (a #cloud-config document)');
  return contents;
}

/** One pair per key: the first one's place, the last one's value. */
function collapseDuplicateKeys(map: YAMLMap): void {
  const first = new Map<string, Pair>();
  map.items = map.items.filter((pair) => {
    const key = keyOf(pair.key);
    const earlier = first.get(key);
    if (!earlier) {
      first.set(key, pair);
      return true;
    }
    earlier.value = pair.value;
    return false;
  });
}

/** Why text is not usable cloud-config user data, as a phrase after the flag name; undefined when it is. */
export function cloudConfigProblem(text: string): string | undefined {
  try {
    parseCloudConfigMap(text, 'user data');
    return undefined;
  } catch (err) {
    return err instanceof CloudInitError ? err.problem : 'is not valid YAML';
  }
}

const keyOf = (key: unknown): string => String(isScalar(key) ? key.value : isNode(key) ? key.toJSON() : key);

/** mergo's isEmptyValue for a YAML value: null, "", 0, false, or an empty map or list. */
function isEmpty(node: unknown): boolean {
  if (node === null || node === undefined) return true;
  if (isScalar(node))
    return (
      node.value === null ||
      node.value === '' ||
      node.value === 0 ||
      node.value === 0n ||
      node.value === false
    );
  if (isMap(node) || isSeq(node)) return node.items.length === 0;
  return false;
}

const clone = <T>(v: T): T => (isNode(v) ? (v.clone() as T) : v);

function mergeInto(dst: YAMLMap, src: YAMLMap, path: string): void {
  for (const pair of src.items) {
    const source = pair.value as Node | null;
    // mergo skips nil sources: `key:` with no value never clears anything.
    if (source === null || (isScalar(source) && source.value === null)) continue;
    const key = keyOf(pair.key);
    const at = path === '' ? key : `${path}.${key}`;
    const target = dst.items.find((p) => keyOf(p.key) === key);
    if (!target) {
      dst.items.push(new Pair(clone(pair.key), clone(source)));
      continue;
    }
    const existing = target.value as Node | null;
    if (isMap(source)) {
      if (isMap(existing)) mergeInto(existing, source, at);
      else if (isEmpty(existing)) target.value = clone(source);
    } else if (isSeq(source)) {
      if (existing === null || (isScalar(existing) && existing.value === null)) target.value = clone(source);
      else if (isSeq(existing)) existing.items.push(...source.items.map(clone));
      else
        throw new CloudInitError(`cloud-init key "${at}"`, 'is a list in one document and not in the other');
    } else if (isEmpty(existing)) {
      target.value = clone(source);
    }
  }
}

export interface UserDataInputs {
  sshUser: string;
  /** Adds the password block (user, password, chpasswd, ssh_pwauth) when non-empty. */
  sshPassword: string;
  /** Authorized key for the SSH user, when there is one. */
  sshPublicKey?: string;
  /** Creates the SSH user in groups sudo and docker instead of only authorizing the key. */
  addUserToDockerGroup: boolean;
  /** --harvester-user-data, decoded. */
  userData: string;
  /** Content of the --harvester-cloud-config file (Rancher's install script), merged last. */
  cloudConfigContent?: string;
}

function baseCloudConfig(inputs: UserDataInputs): Record<string, unknown> {
  const base: Record<string, unknown> = {};
  // The Go driver writes the user into a YAML template: an empty one reads as null.
  const user = inputs.sshUser === '' ? null : inputs.sshUser;
  if (inputs.sshPassword !== '') {
    Object.assign(base, {
      user,
      password: inputs.sshPassword,
      chpasswd: { expire: false },
      ssh_pwauth: true,
    });
  }
  const key = inputs.sshPublicKey?.trim() ?? '';
  if (key !== '') {
    if (inputs.addUserToDockerGroup) {
      base['groups'] = ['docker'];
      base['users'] = [
        {
          name: user,
          sudo: 'ALL=(ALL) NOPASSWD:ALL',
          groups: 'sudo, docker',
          shell: '/bin/bash',
          ssh_authorized_keys: [key],
        },
      ];
    } else {
      base['ssh_authorized_keys'] = [key];
    }
  }
  return base;
}

/**
 * The VM's user data: `#cloud-config` + password block, SSH key, then the user data,
 * then the install script, each merged into what came before. `## template: jinja` is
 * kept as the first line when the user data starts with it (cloud-init only renders a
 * template whose first line says so). Throws CloudInitError.
 */
export function assembleUserData(inputs: UserDataInputs): string {
  const doc = new Document(baseCloudConfig(inputs), { version: '1.1' });
  const merged = doc.contents as YAMLMap;
  if (inputs.userData !== '') mergeInto(merged, parseCloudConfigMap(inputs.userData, 'user data'), '');
  if (inputs.cloudConfigContent) {
    mergeInto(merged, parseCloudConfigMap(inputs.cloudConfigContent, 'cloud-config file'), '');
  }
  const body = merged.items.length === 0 ? '' : doc.toString(TO_STRING);
  const jinja = /^## template: jinja\r?\n/.test(inputs.userData) ? JINJA_TEMPLATE_HEADER : '';
  return jinja + CLOUD_CONFIG_HEADER + body;
}

export interface CloudInitPlacementInputs {
  vmName: string;
  namespace: string;
  userData: string;
  networkData: string;
  /** --harvester-cloud-init-in-secret: never inline, whatever the size. */
  alwaysInSecret: boolean;
  /** Labels for the Secret, so it can be found (and collected) with the VM. */
  labels?: Record<string, string>;
}

export interface CloudInitPlacement {
  /** The VM's `cloudInitNoCloud` volume source. */
  source: CloudInitSource;
  /** The Secret `<vm>-cloudinit` (keys `userdata`, `networkdata`), to create after the VM. */
  secret?: Secret;
}

const overLimit = (text: string): boolean => Buffer.byteLength(text, 'utf8') > CLOUD_INIT_INLINE_LIMIT_BYTES;

/**
 * Inline or Secret. User data over 2048 bytes goes to the Secret; network data goes there
 * when it is over the limit itself or the user data went there (the Go driver only looks
 * at the user data's size, so large network data alone was rejected by KubeVirt); with
 * alwaysInSecret both go there.
 */
export function placeCloudInit(p: CloudInitPlacementInputs): CloudInitPlacement {
  const name = cloudInitSecretName(p.vmName);
  const source: CloudInitSource = {};
  const data: Record<string, string> = {};
  const userInSecret = p.userData !== '' && (p.alwaysInSecret || overLimit(p.userData));
  if (userInSecret) {
    data['userdata'] = Buffer.from(p.userData, 'utf8').toString('base64');
    source.secretRef = { name };
  } else if (p.userData !== '') {
    source.userData = p.userData;
  }
  if (p.networkData !== '') {
    if (p.alwaysInSecret || userInSecret || overLimit(p.networkData)) {
      data['networkdata'] = Buffer.from(p.networkData, 'utf8').toString('base64');
      source.networkDataSecretRef = { name };
    } else {
      source.networkData = p.networkData;
    }
  }
  if (Object.keys(data).length === 0) return { source };
  const metadata: ObjectMeta = { name, namespace: p.namespace };
  if (p.labels) metadata.labels = { ...p.labels };
  return { source, secret: { apiVersion: 'v1', kind: 'Secret', metadata, data } };
}

/**
 * The Secret with the VM as its owner, so the garbage collector deletes it with the VM.
 * Only possible once the VM exists (the reference needs its uid).
 */
export function withVmOwnerReference(
  secret: Secret,
  vm: Pick<VirtualMachine, 'apiVersion' | 'kind' | 'metadata'>,
): Secret {
  if (!vm.metadata.uid) throw new Error(`VM ${vm.metadata.name} has no uid yet; create it before its Secret`);
  return {
    ...secret,
    metadata: {
      ...secret.metadata,
      ownerReferences: [
        { apiVersion: vm.apiVersion, kind: vm.kind, name: vm.metadata.name, uid: vm.metadata.uid },
      ],
    },
  };
}
