import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import type { KubeClient } from '../../kube/client.js';
import { KubeError } from '../../kube/errors.js';
import { guestClusterVms } from './load-balancers.js';

const forbidden = (): Promise<never> =>
  Promise.reject(new KubeError('Forbidden', 'list', 'list: forbidden (HTTP 403)', { statusCode: 403 }));
const vm = (namespace: string, name: string) => ({ metadata: { namespace, name } });

/** A credential that may list VMs only in the namespaces given, and namespaces if `namespaces`. */
function client(readable: string[], namespaces: string[] | undefined): HarvesterApi {
  return new HarvesterApi({
    list: (type: { plural: string }, opts: { namespace?: string }) => {
      if (type.plural === 'namespaces')
        return namespaces
          ? Promise.resolve({ items: namespaces.map((n) => ({ metadata: { name: n } })) })
          : forbidden();
      if (opts.namespace === undefined || !readable.includes(opts.namespace)) return forbidden();
      return Promise.resolve({ items: [vm(opts.namespace, `${opts.namespace}-vm`)] });
    },
  } as unknown as KubeClient);
}

describe('guestClusterVms: whether a guest cluster is gone, across every namespace readable', () => {
  it('falls back to namespace by namespace, naming those it could not read', async () => {
    const got = await guestClusterVms(client(['a', 'b'], ['a', 'b', 'c']), 'a', [vm('a', 'a-vm')]);
    assert.deepEqual(
      got.vms.map((v) => v.metadata.name),
      ['a-vm', 'b-vm'],
    );
    assert.deepEqual(got.unreadable, ['c']);
  });
  it('says so when it may list neither VMs cluster-wide nor namespaces', async () => {
    const got = await guestClusterVms(client(['a'], undefined), 'a', [vm('a', 'a-vm')]);
    assert.deepEqual(
      got.vms.map((v) => v.metadata.name),
      ['a-vm'],
    );
    assert.match(got.unreadable[0] ?? '', /every namespace but a/);
  });
});
