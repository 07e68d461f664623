// What Harvester's processes leave in the cluster on their first start, kept for the next
// sandbox on this machine, as a Harvester cluster keeps it in etcd when its pods restart:
// - the CRDs `harvester` creates itself at start (pkg/data/crd.go; wrangler apply labels each
//   with objectset.rio.cattle.io/hash). The webhook's caches wait for them, about 9 s.
// - the webhook's CA and serving certificate (Secrets harvester-webhook-ca, harvester-webhook-tls)
//   and the two configurations it registered with that CA. A webhook that finds its CA applies
//   the same configurations again 15 s after it starts, changing nothing; without them it
//   registers only then, and `harvester` waits for it.
// Kept in the build's cache directory, mode 0600 (the CA's private key is Harvester's own), keyed
// by Harvester's version; a file that does not parse or has another version is ignored.
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { KubeObject } from '../../src/kube/resources.js';

export const STATE_FILE = 'started-state.json';

/** The label wrangler's apply puts on what Harvester creates (pkg/data/crd.go applies its CRDs). */
const APPLIED_BY_HARVESTER = 'objectset.rio.cattle.io/hash';

export interface StartedState {
  version: string;
  crds: KubeObject[];
  /** harvester-webhook-ca and harvester-webhook-tls. */
  secrets: KubeObject[];
  validating: KubeObject;
  mutating: KubeObject;
}

/** The object as one writes it again: no server-set fields, no owners (their uids differ), no status. Pure. */
export function restorable(obj: KubeObject): KubeObject {
  const {
    uid: _uid,
    resourceVersion: _rv,
    creationTimestamp: _created,
    generation: _generation,
    managedFields: _managed,
    ownerReferences: _owners,
    ...metadata
  } = obj.metadata as KubeObject['metadata'] & { managedFields?: unknown };
  const { status: _status, ...rest } = obj as KubeObject & { status?: unknown };
  return { ...rest, metadata };
}

/** The CRDs Harvester created itself, among all of a cluster's. Pure. */
export function crdsHarvesterCreated(all: KubeObject[]): KubeObject[] {
  return all
    .filter((c) => c.metadata.labels?.[APPLIED_BY_HARVESTER] !== undefined)
    .map((c) => ({
      ...restorable(c),
      // A list's items carry no kind.
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
    }));
}

function isObject(v: unknown): v is KubeObject {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as KubeObject).kind === 'string' &&
    typeof (v as KubeObject).metadata?.name === 'string'
  );
}

/** The state in `text` when it is one for `version` and shaped as written, else undefined. Pure. */
export function parseStartedState(text: string, version: string): StartedState | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const s = parsed as Partial<StartedState>;
  if (
    s.version !== version ||
    !Array.isArray(s.crds) ||
    !s.crds.every(isObject) ||
    !Array.isArray(s.secrets) ||
    s.secrets.length !== 2 ||
    !s.secrets.every(isObject) ||
    !isObject(s.validating) ||
    !isObject(s.mutating)
  )
    return undefined;
  return s as StartedState;
}

export async function loadStartedState(dir: string, version: string): Promise<StartedState | undefined> {
  const text = await fsp.readFile(path.join(dir, STATE_FILE), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : parseStartedState(text, version);
}

/** Written whole or not at all (a rename), readable by the owner only. */
export async function saveStartedState(dir: string, state: StartedState): Promise<void> {
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(state), { mode: 0o600 });
  await fsp.rename(tmp, file);
}
