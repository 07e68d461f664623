// Installs the sandbox's CustomResourceDefinitions (the YAML files beside this module)
// and waits, by watch, until each one is Established.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import { keyOf } from '../../src/api/object-key.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { repoRoot } from '../control-plane/binaries.js';

interface Crd extends KubeObject {
  status?: { conditions?: Array<{ type: string; status: string; message?: string }> };
}

export type CrdSet = 'harvester' | 'rancher' | 'all';

const RANCHER_GROUPS = [
  'cluster.x-k8s.io',
  'provisioning.cattle.io',
  'rke.cattle.io',
  'rke-machine.cattle.io',
  'rke-machine-config.cattle.io',
  'management.cattle.io',
  'monitoring.coreos.com',
];
/** Our own reduced Cluster API CRDs (cluster.x-k8s.io.yaml): left out where the real ones are installed. */
export const OWN_CAPI_GROUP = 'cluster.x-k8s.io';

export interface CrdSelection {
  /** Leave these API groups out (the real Cluster API brings its own). */
  without?: string[];
}

export async function loadCrds(set: CrdSet = 'all', selection: CrdSelection = {}): Promise<Crd[]> {
  const dir = path.join(repoRoot(), 'sandbox', 'crds');
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const crds: Crd[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await fs.readFile(path.join(dir, file), 'utf8'))) {
      const obj = doc.toJS() as Crd | null;
      if (obj?.kind !== 'CustomResourceDefinition') continue;
      const group = (obj as unknown as { spec: { group: string } }).spec.group;
      const isRancher = RANCHER_GROUPS.includes(group);
      if (selection.without?.includes(group)) continue;
      if (set === 'all' || (set === 'rancher') === isRancher) crds.push(obj);
    }
  }
  return crds;
}

export async function installCrds(
  admin: KubeClient,
  set: CrdSet = 'all',
  timeoutMs = 30_000,
  selection: CrdSelection = {},
): Promise<string[]> {
  return installEstablished(admin, await loadCrds(set, selection), { timeoutMs, existing: 'keep' });
}

/**
 * Creates the object, or replaces the one already there (so a restarted sandbox with new ports
 * and a new CA is pointed right).
 */
export async function createOrReplace(
  admin: KubeClient,
  type: ResourceType,
  object: KubeObject,
): Promise<KubeObject> {
  try {
    return await admin.create(type, object);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const current = await admin.get(type, keyOf(object));
    return await admin.update(type, {
      ...object,
      metadata: { ...object.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  }
}

/**
 * Installs CRDs and waits, by watch, until each is Established: our own (`existing: 'keep'`, the
 * file's content is the same) or a component's generated ones (`'replace'`: webhook URLs move).
 * Each wait watches from the create's answer: listing CRDs makes kube-apiserver decode every CRD
 * it holds (over a hundred here, some of megabytes), once per wait.
 */
export async function installEstablished(
  admin: KubeClient,
  crds: KubeObject[],
  opts: { timeoutMs: number; existing: 'keep' | 'replace' },
): Promise<string[]> {
  const written: Array<Crd | undefined> = [];
  for (const crd of crds) written.push(await writeCrd(admin, crd, opts.existing));
  await Promise.all(
    crds.map((crd, i) => {
      const name = crd.metadata.name;
      const from = written[i];
      return waitFor<Crd>(admin, {
        type: Resources.crd,
        name,
        ...(from ? { from } : {}),
        description: `CRD ${name} to be Established`,
        timeoutMs: opts.timeoutMs,
        until: (o) => o?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false,
        describeState: (o) =>
          (o?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`).join(', ') ||
          'no conditions yet',
      });
    }),
  );
  return crds.map((c) => c.metadata.name);
}

/** The CRD as the apiserver answered its write; `undefined` when an existing one was kept. */
async function writeCrd(admin: KubeClient, crd: KubeObject, existing: 'keep' | 'replace'): Promise<Crd | undefined> {
  if (existing === 'replace') return await createOrReplace(admin, Resources.crd, crd);
  try {
    return await admin.create<Crd>(Resources.crd, crd);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return undefined;
  }
}
