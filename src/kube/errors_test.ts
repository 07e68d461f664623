// The one error classification, through the client against a scripted server: what each
// answer becomes (kind, reason, message, credential), which are retried, and how long the
// client pauses before a retry (Retry-After in seconds, as a date, in a Status; capped).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { KubeClient } from './client.js';
import {
  KubeError,
  admissionDenial,
  admissionDenialOf,
  classifyStatus,
  ignoreAlreadyExists,
  ignoreNotFound,
  isConflict,
  isKubeError,
  isNotFound,
  parseStatusBody,
  type KubeErrorKind,
} from './errors.js';
import { Resources } from './resources.js';
import { SCRIPTED_TOKEN, ScriptedServer, answerJson, secret, status } from './testing.js';

interface Answer {
  code: number;
  body: unknown;
  headers?: Record<string, string>;
}

const answers: Answer[] = [];
const pauses: number[] = [];
let server: ScriptedServer;
let client: KubeClient;

before(async () => {
  server = await ScriptedServer.start((_req, res) => {
    const a = answers.shift() ?? { code: 200, body: secret('s', '1') };
    answerJson(res, a.code, a.body, a.headers);
  });
  client = server.client({
    retry: { attempts: 3, baseDelayMs: 100, maxDelayMs: 1_000 },
    sleep: (ms) => {
      pauses.push(ms);
      return Promise.resolve();
    },
  });
});
after(() => server.close());
beforeEach(() => {
  answers.length = 0;
  pauses.length = 0;
  server.requests.length = 0;
});

const getSecret = (): Promise<unknown> => client.get(Resources.secret, { namespace: 'default', name: 's' });

async function failure(...script: Answer[]): Promise<KubeError> {
  answers.push(...script);
  try {
    await getSecret();
  } catch (err) {
    assert.ok(err instanceof KubeError, String(err));
    return err;
  }
  throw new Error('the request succeeded');
}

const forbidden = (user: string): string =>
  `secrets "s" is forbidden: User "${user}" cannot get resource "secrets" in API group "" in the namespace "default"`;

// The refusals come first: after a 5xx the client retries 401/403 for a while (a server
// still starting; client-guards_test.ts), which these tests are not about.
describe('error classification', () => {
  it('401 is a rejected credential, named without its secret, and final at once', async () => {
    const err = await failure({ code: 401, body: status(401, 'Unauthorized', 'Unauthorized') });
    assert.equal(err.kind, 'CredentialRejected');
    assert.equal(err.statusCode, 401);
    assert.equal(err.extra.credential?.identity, 'Rancher token kubeconfig-u-scripted');
    assert.equal(err.extra.credential?.server, server.url);
    assert.match(
      err.message,
      /^get secrets default\/s: Unauthorized \(HTTP 401 from http:\/\/127\.0\.0\.1:\d+\)$/,
    );
    assert.ok(!err.message.includes(SCRIPTED_TOKEN.split(':')[1] ?? '?'));
    assert.equal(server.requests.length, 1);
  });

  for (const user of ['system:unauthenticated', 'system:anonymous']) {
    it(`403 for ${user} is a rejected credential, not a missing permission`, async () => {
      const err = await failure({ code: 403, body: status(403, 'Forbidden', forbidden(user)) });
      assert.equal(err.kind, 'CredentialRejected');
      assert.equal(err.extra.reason, 'Forbidden');
      assert.ok(err.extra.credential);
    });
  }

  it('403 for a named user is Forbidden, with the server message', async () => {
    const err = await failure({
      code: 403,
      body: status(403, 'Forbidden', forbidden('system:serviceaccount:a:b')),
    });
    assert.equal(err.kind, 'Forbidden');
    assert.equal(err.extra.reason, 'Forbidden');
    assert.equal(err.extra.credential, undefined);
    assert.match(err.message, /User "system:serviceaccount:a:b" cannot get resource "secrets"/);
  });

  it("Rancher's norman error bodies are read like a Status", async () => {
    const norman = (code: string, statusCode: number, message: string): unknown => ({
      type: 'error',
      Code: { Code: code, Status: statusCode },
      Message: message,
      Cause: null,
      FieldName: '',
    });
    const anonymous = await failure({
      code: 403,
      body: norman(
        'Forbidden',
        403,
        'clusters.management.cattle.io "c-m-1" is forbidden: User "system:unauthenticated" cannot get resource "clusters"',
      ),
    });
    assert.equal(anonymous.kind, 'CredentialRejected');
    assert.equal(anonymous.extra.reason, 'Forbidden');
    assert.match(anonymous.message, /clusters\.management\.cattle\.io "c-m-1" is forbidden/);
    const missing = await failure({ code: 404, body: norman('NotFound', 404, 'cluster c-m-2 not found') });
    assert.equal(missing.kind, 'NotFound');
    assert.match(missing.message, /cluster c-m-2 not found \(HTTP 404/);
  });

  it('Status bodies: each code and reason to its kind', async () => {
    const cases: Array<[number, string, KubeErrorKind]> = [
      [400, 'BadRequest', 'BadRequest'],
      [404, 'NotFound', 'NotFound'],
      [405, 'MethodNotAllowed', 'MethodNotAllowed'],
      [409, 'AlreadyExists', 'AlreadyExists'],
      [409, 'Conflict', 'Conflict'],
      [410, 'Expired', 'Gone'],
      [422, 'Invalid', 'Invalid'],
      [418, 'Teapot', 'Unknown'],
    ];
    for (const [code, reason, kind] of cases) {
      const err = await failure({ code, body: status(code, reason, `the ${reason} message`) });
      assert.equal(err.kind, kind, `${code} ${reason}`);
      assert.equal(err.extra.reason, reason);
      assert.match(err.message, new RegExp(`: the ${reason} message \\(HTTP ${code} from `));
    }
    assert.equal(server.requests.length, cases.length, 'none of them retried');
  });

  it('a non-JSON answer (a proxy in front) keeps a short text of it', async () => {
    const err = await failure(
      ...Array.from({ length: 3 }, () => ({
        code: 502,
        body: `<html>Bad Gateway${' '.repeat(1000)}x</html>`,
      })),
    );
    assert.equal(err.kind, 'ServerError');
    assert.match(err.message, /: <html>Bad Gateway +\(HTTP 502/);
    assert.ok(err.message.length < 400);
    assert.deepEqual(parseStatusBody(''), undefined);
  });

  it('429 with Retry-After in seconds: the pause is what the server asked', async () => {
    answers.push({
      code: 429,
      body: status(429, 'TooManyRequests', 'slow down'),
      headers: { 'Retry-After': '2' },
    });
    await getSecret();
    assert.deepEqual(pauses, [2_000]);
    assert.equal(server.requests.length, 2);
  });

  it('Retry-After as an HTTP date, and in the Status details, are honoured too', async () => {
    const date = new Date(Date.now() + 3_000).toUTCString();
    answers.push(
      { code: 503, body: status(503, 'ServiceUnavailable', 'later'), headers: { 'Retry-After': date } },
      { code: 429, body: status(429, 'TooManyRequests', 'later', { details: { retryAfterSeconds: 3 } }) },
    );
    await getSecret();
    assert.equal(pauses.length, 2);
    // An HTTP date has whole seconds: 3 s from now is 2 to 3 s away.
    assert.ok((pauses[0] ?? 0) > 1_000 && (pauses[0] ?? 0) <= 3_000, `date: ${pauses[0]} ms`);
    assert.equal(pauses[1], 3_000);
  });

  it('a hostile Retry-After is capped; 5xx without one backs off exponentially with jitter', async () => {
    answers.push({
      code: 429,
      body: status(429, 'TooManyRequests', 'x'),
      headers: { 'Retry-After': '86400' },
    });
    await getSecret();
    assert.deepEqual(pauses, [4_000], 'four times maxDelayMs');
    pauses.length = 0;
    const err = await failure(
      { code: 500, body: status(500, 'InternalError', 'etcd') },
      { code: 503, body: status(503, 'ServiceUnavailable', 'starting') },
      { code: 500, body: status(500, 'InternalError', 'etcd again') },
    );
    assert.equal(err.kind, 'ServerError');
    assert.match(err.message, /etcd again/);
    assert.equal(pauses.length, 2, 'three attempts in all');
    const [first = 0, second = 0] = pauses;
    assert.ok(first >= 50 && first <= 100, `first pause ${first}`);
    assert.ok(second >= 100 && second <= 200, `second pause ${second}`);
  });

  it("504 is a Timeout that is retried (the apiserver's own deadline); 409 is not retried", async () => {
    answers.push({ code: 504, body: status(504, 'Timeout', 'the request did not complete in time') });
    await getSecret();
    assert.equal(server.requests.length, 2);
    const conflict = await failure({ code: 409, body: status(409, 'Conflict', 'changed') });
    assert.equal(conflict.kind, 'Conflict');
    assert.equal(server.requests.length, 3);
  });

  it('classifyStatus without a body', () => {
    assert.equal(classifyStatus(401, undefined), 'CredentialRejected');
    assert.equal(classifyStatus(403, undefined), 'Forbidden');
    assert.equal(classifyStatus(409, undefined), 'Conflict');
    assert.equal(classifyStatus(599, undefined), 'ServerError');
  });
});

describe('the helpers call sites use', () => {
  const notFound = new KubeError('NotFound', 'get secrets default/s', 'not found');
  const conflict = new KubeError('Conflict', 'update secrets default/s', 'changed');

  it('name one kind, or any of several; never a plain Error', () => {
    assert.ok(isNotFound(notFound) && !isNotFound(conflict));
    assert.ok(isConflict(conflict) && !isConflict(new Error('Conflict')));
    assert.ok(isKubeError(conflict, 'NotFound', 'Conflict'));
    assert.ok(!isKubeError(conflict, 'NotFound', 'AlreadyExists'));
    assert.ok(isKubeError(conflict), 'any kind when none is named');
  });

  it('ignoreNotFound turns only a NotFound into undefined, through the client too', async () => {
    assert.equal(ignoreNotFound(notFound), undefined);
    assert.throws(() => ignoreNotFound(conflict), /changed/);
    assert.throws(() => ignoreAlreadyExists(notFound), /not found/);
    answers.push({ code: 404, body: status(404, 'NotFound', 'secrets "s" not found') });
    assert.equal(await getSecret().catch(ignoreNotFound), undefined);
    answers.push({ code: 409, body: status(409, 'Conflict', 'changed') });
    await assert.rejects(getSecret().catch(ignoreNotFound), (err: unknown) => isConflict(err));
  });
});

describe('an admission webhook’s refusal', () => {
  const denied = (message: string): string =>
    `admission webhook "validator.harvesterhci.io" denied the request: ${message}`;

  it('is kept apart from its status code, with the webhook’s own words', async () => {
    const words = 'can not delete the volume pvc-a which is currently attached to VM: default/vm1';
    const err = await failure({ code: 409, body: status(409, 'Conflict', denied(words)) });
    assert.equal(err.kind, 'Conflict');
    assert.deepEqual(admissionDenial(err), { webhook: 'validator.harvesterhci.io', message: words });
    // A conflict of another kind (a precondition, a resourceVersion) is no refusal.
    const precondition = await failure({
      code: 409,
      body: status(
        409,
        'Conflict',
        'Operation cannot be fulfilled: Precondition failed: UID in precondition: a',
      ),
    });
    assert.equal(admissionDenial(precondition), undefined);
    assert.equal(admissionDenial(new Error(denied(words))), undefined, 'only from an apiserver’s answer');
  });

  it('with no words, or only a message that mentions one, is read as the apiserver writes it', () => {
    assert.deepEqual(admissionDenialOf({ message: 'admission webhook "w.example" denied the request' }), {
      webhook: 'w.example',
      message: '',
    });
    assert.equal(
      admissionDenialOf({ message: 'the pod says: admission webhook "w" denied the request' }),
      undefined,
    );
    assert.deepEqual(
      admissionDenialOf({ message: 'admission webhook "w" denied the request without explanation' }),
      { webhook: 'w', message: '' },
    );
    // A webhook that could not be called refused nothing: the apiserver failed the request.
    assert.equal(
      admissionDenialOf({
        message: 'Internal error occurred: failed calling webhook "w": connection refused',
      }),
      undefined,
    );
  });

  it('asks with a dry run: DeleteOptions carry dryRun All, and the operation says so', async () => {
    answers.push({ code: 409, body: status(409, 'Conflict', denied('in use')) });
    await assert.rejects(
      client.delete(
        Resources.pvc,
        { namespace: 'default', name: 'pvc-a' },
        { dryRun: true, preconditions: { uid: 'u1' } },
      ),
      (err: unknown) =>
        err instanceof KubeError && /^dry-run delete persistentvolumeclaims default\/pvc-a/.test(err.message),
    );
    const sent = server.requests.at(-1);
    assert.equal(sent?.method, 'DELETE');
    assert.deepEqual(JSON.parse(sent?.body ?? '{}'), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: 'u1' },
      dryRun: ['All'],
    });
  });
});
