// A create whose first POST reached the server but whose answer was lost (the connection
// dropped): the retry meets the object as AlreadyExists, and the client returns that object,
// its own, instead of failing the caller. Another's object, or an AlreadyExists after a
// failure that never reached the server, is still reported.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { KubeClient } from './client.js';
import { isAlreadyExists } from './errors.js';
import { Resources, type KubeObject } from './resources.js';
import { holdsWhatWasSent } from './retried-create.js';
import { ScriptedServer, answerJson, status, type ScriptedRequest } from './testing.js';

/** An apiserver in miniature: stores what it is sent, adds what a server adds. */
const stored = new Map<string, KubeObject>();
let dropFirstPost = true;
let firstPostAnswer: number | undefined;
let posts = 0;
let server: ScriptedServer;
let client: KubeClient;

function serve(req: ScriptedRequest, res: http.ServerResponse): void {
  const name = req.path.split('/').pop() ?? '';
  if (req.method === 'GET') {
    const obj = stored.get(name);
    return obj
      ? answerJson(res, 200, obj)
      : answerJson(res, 404, status(404, 'NotFound', `"${name}" not found`));
  }
  if (req.method !== 'POST') return answerJson(res, 405, status(405, 'MethodNotAllowed', 'no'));
  posts++;
  const sent = JSON.parse(req.body) as KubeObject & {
    stringData?: Record<string, string>;
    data?: Record<string, string>;
  };
  const key = sent.metadata.name;
  if (posts === 1 && firstPostAnswer !== undefined) {
    return answerJson(
      res,
      firstPostAnswer,
      status(firstPostAnswer, firstPostAnswer === 429 ? 'TooManyRequests' : 'InternalError', 'later'),
    );
  }
  if (stored.has(key)) {
    return answerJson(
      res,
      409,
      status(409, 'AlreadyExists', `secrets "${key}" already exists`, {
        details: { name: key, kind: 'secrets' },
      }),
    );
  }
  const { stringData, ...rest } = sent;
  const created = {
    ...rest,
    metadata: {
      ...sent.metadata,
      uid: `uid-${posts}`,
      resourceVersion: String(100 + posts),
      creationTimestamp: new Date().toISOString(),
    },
    type: 'Opaque',
    data: {
      ...sent.data,
      ...Object.fromEntries(
        Object.entries(stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
    },
  };
  stored.set(key, created);
  // Carried out, but the answer never leaves: the connection drops first.
  if (posts === 1 && dropFirstPost) return void res.socket?.destroy();
  answerJson(res, 201, created);
}

before(async () => {
  server = await ScriptedServer.start(serve);
  client = server.client();
});
after(() => server.close());
beforeEach(() => {
  stored.clear();
  posts = 0;
  dropFirstPost = true;
  firstPostAnswer = undefined;
  server.requests.length = 0;
});

const ours = (name = 'cloud-init-abc12'): KubeObject & { stringData: Record<string, string> } => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'default', labels: { 'harvesterhci.io/cloud-init-template': 'harvester' } },
  stringData: { userdata: '#cloud-config\npackages: [qemu-guest-agent]\n' },
});

describe('retried create', () => {
  it('a POST carried out whose answer was lost: the retry returns the object it created', async () => {
    const created = await client.create(Resources.secret, ours());
    assert.equal(created.metadata.uid, 'uid-1', 'the object the first POST made');
    assert.deepEqual(
      server.requests.map((r) => r.method),
      ['POST', 'POST', 'GET'],
    );
  });

  it("someone else's object under that name is still AlreadyExists", async () => {
    stored.set('cloud-init-abc12', {
      ...ours(),
      metadata: { name: 'cloud-init-abc12', namespace: 'default', uid: 'theirs', resourceVersion: '7' },
      data: { userdata: Buffer.from('#cloud-config\n{}\n').toString('base64') },
    } as KubeObject);
    dropFirstPost = false;
    // Its first POST fails as if dropped: a 500 after which the server may have carried it out.
    firstPostAnswer = 500;
    await assert.rejects(client.create(Resources.secret, ours()), (err: unknown) => {
      assert.ok(isAlreadyExists(err), String(err));
      return true;
    });
    assert.equal(stored.get('cloud-init-abc12')?.metadata.uid, 'theirs');
  });

  it('after a failure that never reached the server (429), AlreadyExists is reported without a look', async () => {
    stored.set('cloud-init-abc12', {
      ...ours(),
      metadata: { ...ours().metadata, uid: 'same-content' },
    });
    dropFirstPost = false;
    firstPostAnswer = 429;
    await assert.rejects(client.create(Resources.secret, ours()), (err: unknown) => isAlreadyExists(err));
    assert.deepEqual(
      server.requests.map((r) => r.method),
      ['POST', 'POST'],
    );
  });

  it('a first AlreadyExists, with no retry before it, is reported as before', async () => {
    dropFirstPost = false;
    await client.create(Resources.secret, ours());
    await assert.rejects(client.create(Resources.secret, ours()), (err: unknown) => isAlreadyExists(err));
  });
});

describe('holdsWhatWasSent', () => {
  const sent = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: 'vm1', namespace: 'default', labels: { a: 'b' }, annotations: {} },
    spec: {
      runStrategy: 'RerunOnFailure',
      template: { spec: { domain: { devices: { disks: [{ name: 'disk-0', bootOrder: 1 }] } } } },
      dataVolumeTemplates: [],
      hostname: '',
    },
    status: { printableStatus: 'Stopped' },
  } as KubeObject;
  const found = (over: Record<string, unknown> = {}): KubeObject =>
    ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: {
        name: 'vm1',
        namespace: 'default',
        uid: 'u',
        resourceVersion: '5',
        labels: { a: 'b', 'added-by': 'a-webhook' },
        creationTimestamp: '2025-01-01T00:00:00Z',
      },
      spec: {
        runStrategy: 'RerunOnFailure',
        template: {
          spec: {
            domain: { devices: { disks: [{ name: 'disk-0', bootOrder: 1, disk: { bus: 'virtio' } }] } },
          },
        },
      },
      ...over,
    }) as KubeObject;

  it('accepts what a server adds and what it leaves out when sent empty', () => {
    assert.ok(holdsWhatWasSent(sent, found()));
  });

  it('refuses a changed field, a different list, or an object being deleted', () => {
    const spec = (found() as KubeObject & { spec: Record<string, unknown> }).spec;
    assert.ok(!holdsWhatWasSent(sent, found({ spec: { ...spec, runStrategy: 'Halted' } })));
    assert.ok(
      !holdsWhatWasSent(
        sent,
        found({
          spec: {
            ...spec,
            template: { spec: { domain: { devices: { disks: [{ name: 'disk-1', bootOrder: 1 }] } } } },
          },
        }),
      ),
    );
    const deleting = found();
    deleting.metadata.deletionTimestamp = '2025-01-01T00:00:01Z';
    assert.ok(!holdsWhatWasSent(sent, deleting));
    assert.ok(!holdsWhatWasSent(sent, { ...found(), metadata: { ...found().metadata, labels: { a: 'c' } } }));
  });

  it("compares a Secret's data and stringData by their bytes", () => {
    const s = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      stringData: { k: 'v' },
      data: { b: 'AQI' },
    };
    const stored = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', uid: 'u' },
      data: { k: 'dg==', b: 'AQI=' },
    };
    assert.ok(holdsWhatWasSent(s, stored));
    const changed = { ...stored, data: { k: 'dw==', b: 'AQI=' } };
    assert.ok(!holdsWhatWasSent(s, changed));
  });
});
