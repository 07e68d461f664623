// A cache the cleanup tests hand to the code under test in place of the manager's: `get` and
// `list` from functions, and the HarvesterMachines' cluster index ("namespace/cluster", the only
// index those code paths ask for), computed the way caches.ts computes it.
import { CAPI_LABEL_CLUSTER_NAME } from '../../rancher/labels.js';
import { clusterIndexKey } from '../common/caches.js';

interface Labelled {
  metadata: { namespace?: string; labels?: Record<string, string> };
}

export function fakeCache<T>(get: () => T | undefined, list: () => T[] = () => []) {
  return {
    get,
    list: (filter?: (o: T) => boolean) => (filter ? list().filter(filter) : list()),
    byIndex: (_index: string, value: string) =>
      list().filter((o) => {
        const { metadata } = o as Labelled;
        const cluster = metadata.labels?.[CAPI_LABEL_CLUSTER_NAME];
        return cluster !== undefined && clusterIndexKey(metadata.namespace, cluster) === value;
      }),
  };
}
