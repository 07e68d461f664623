// The one way this project talks to Kubernetes: typed verbs over one transport,
// bounded retries with backoff (honouring Retry-After), and classified errors.
import type { KubeConfig } from '@kubernetes/client-node';
import { describeCredential } from './credential.js';
import { kubeConfigFor, type KubeconfigTrust } from './credential-content.js';
import type { LoadedKubeconfig } from './kubeconfig-loading.js';
import {
  ignoreNotFound,
  isKubeError,
  isNotFound,
  isRetryable,
  KubeError,
  type CredentialDescription,
} from './errors.js';
import {
  apiVersionOf,
  describeOperation,
  resourcePath,
  type KubeObject,
  type NewObject,
  type ObjectList,
  type ObjectPath,
  type ResourceType,
} from './resources.js';
import { holdsWhatWasSent, mayHaveBeenCarriedOut } from './retried-create.js';
import { Transport } from './transport.js';
import { openWatch, type WatchEvent, type WatchOptions } from './watch.js';
import { registerSecret } from '../log/redact.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface KubeClientOptions {
  /** Deadline of one request (not of a watch). */
  requestTimeoutMs?: number;
  retry?: RetryPolicy;
  /** Called once per HTTP request sent (benchmarks count API requests). */
  onRequest?: (method: string, path: string) => void;
  sleep?: (ms: number) => Promise<void>;
  /** Where HTTP_PROXY, HTTPS_PROXY and NO_PROXY are read (default: process.env). */
  environment?: Readonly<Record<string, string | undefined>>;
  /** Ask for gzipped answers (default true; TransportOptions.compression). */
  compression?: boolean;
  /** The most one answer or watch event may hold, unpacked (TransportOptions.maxResponseBytes). */
  maxResponseBytes?: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 8_000 };

export type PatchType = 'merge' | 'json' | 'strategic';
const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; the answer's metadata.continue fetches the next page. */
  limit?: number;
  continue?: string;
  /**
   * "0": any state the watch cache has, at once (possibly behind etcd). With
   * resourceVersionMatch "NotOlderThan": a state at least as new as this revision, from the
   * watch cache once it has seen it. Default: a consistent read.
   */
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan';
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
  /**
   * Ask, change nothing: the apiserver runs the deletion through authorization and admission
   * (webhooks declared without side effects) and answers as it would, without deleting.
   */
  dryRun?: boolean;
}

type Query = Record<string, string | number | boolean | undefined>;

function withQuery(path: string, query: Query | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Verbs on one object need its name: without one the path is the collection's, and a GET
 * would list, a DELETE delete every object of the namespace, a PATCH or PUT fail obscurely.
 */
function nameless(operation: string, name: string | undefined): Promise<never> | undefined {
  if (name) return undefined;
  return Promise.reject(
    new KubeError(
      'BadRequest',
      operation,
      `${operation}: no object name given (refusing to address the whole collection)`,
    ),
  );
}

/**
 * An apiserver that has just started serves requests before its authenticators and its RBAC
 * authorizer have filled their caches: for a moment valid tokens get 401 and permitted users
 * 403. So for this long after the server was seen unreachable or failing, a refusal may be
 * that moment and is tried again (within the same bounded attempts and deadlines).
 */
const STARTUP_GRACE_MS = 30_000;

export class KubeClient {
  readonly transport: Transport;
  private readonly requestTimeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly sleep: (ms: number) => Promise<void>;
  private lastOutageAt = Number.NEGATIVE_INFINITY;

  private constructor(
    readonly kubeConfig: KubeConfig,
    private readonly options: KubeClientOptions,
  ) {
    this.transport = new Transport(kubeConfig, describeCredential(kubeConfig), {
      ...(options.environment ? { environment: options.environment } : {}),
      ...(options.compression !== undefined ? { compression: options.compression } : {}),
      ...(options.maxResponseBytes !== undefined ? { maxResponseBytes: options.maxResponseBytes } : {}),
    });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.sleep = options.sleep ?? defaultSleep;
  }

  /**
   * A client for the current context of a kubeconfig given as YAML text. By default the text
   * is someone else's (a cloud credential's): a field that names a file, a command or a
   * proxy is refused before anything is read, run or sent (credential-content.ts). Content
   * the operator wrote (their own file, the sandbox's) passes `trust: 'operator'`.
   */
  static fromKubeconfig(
    content: string,
    options: KubeClientOptions & { trust?: KubeconfigTrust } = {},
  ): KubeClient {
    registerSecret(content);
    const { trust = 'credential', ...clientOptions } = options;
    return new KubeClient(kubeConfigFor(content, trust), clientOptions);
  }

  /** A client for a kubeconfig loaded by client-go's rules (kubeconfig-loading.ts), in-cluster too. */
  static fromLoaded(loaded: LoadedKubeconfig, options: KubeClientOptions = {}): KubeClient {
    return new KubeClient(loaded.kubeConfig, options);
  }

  get credential(): CredentialDescription {
    return this.transport.credential;
  }

  get server(): string {
    return this.transport.server.origin + this.transport.server.pathname.replace(/\/$/, '');
  }

  /** A raw API call with retries; resolves with the parsed JSON body. */
  async call<T>(req: {
    method: string;
    path: string;
    query?: Query;
    body?: unknown;
    contentType?: string;
    operation: string;
    timeoutMs?: number;
    /** Called with each failure that is about to be retried. */
    onRetry?: (err: unknown) => void;
  }): Promise<T> {
    const path = withQuery(req.path, req.query);
    const body =
      req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    let attempt = 0;
    for (;;) {
      attempt++;
      try {
        this.options.onRequest?.(req.method, path);
        const res = await this.transport.send({
          method: req.method,
          path,
          ...(body !== undefined ? { body } : {}),
          ...(req.contentType !== undefined ? { contentType: req.contentType } : {}),
          operation: req.operation,
          timeoutMs: req.timeoutMs ?? this.requestTimeoutMs,
        });
        return (res.body ? JSON.parse(res.body) : {}) as T;
      } catch (err) {
        this.noteOutage(err);
        if (!this.isTransient(err) || attempt >= this.retry.attempts) throw err;
        req.onRetry?.(err);
        await this.sleep(this.backoff(attempt, err as KubeError));
      }
    }
  }

  /**
   * Remembers when the server was last unreachable or failing (see STARTUP_GRACE_MS); a watch
   * whose connection broke mid-stream counts too.
   */
  private noteOutage(err: unknown): void {
    if (isKubeError(err, 'Unreachable', 'ServerError')) {
      this.lastOutageAt = Date.now();
    }
  }

  /**
   * Worth another try: the retryable kinds, and a refused credential or a 403 shortly after
   * an outage (an apiserver starting up). Waits use it too.
   */
  isTransient(err: unknown): boolean {
    if (isRetryable(err)) return true;
    return (
      isKubeError(err, 'CredentialRejected', 'Forbidden') && Date.now() - this.lastOutageAt < STARTUP_GRACE_MS
    );
  }

  private backoff(attempt: number, err: KubeError): number {
    const exponential = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
    const jittered = exponential / 2 + Math.random() * (exponential / 2);
    const asked = err.extra.retryAfterMs;
    // The server's Retry-After wins, but a hostile or broken value cannot stall us for long.
    return asked !== undefined ? Math.min(asked, this.retry.maxDelayMs * 4) : jittered;
  }

  get<T extends KubeObject>(type: ResourceType, at: { namespace?: string; name: string }): Promise<T> {
    const refused = nameless(describeOperation('get', type, at), at.name);
    if (refused) return refused;
    return this.call<T>({
      method: 'GET',
      path: resourcePath(type, at),
      operation: describeOperation('get', type, at),
    });
  }

  /** Like get, but undefined when the object does not exist. */
  async find<T extends KubeObject>(
    type: ResourceType,
    at: { namespace?: string; name: string },
  ): Promise<T | undefined> {
    return this.get<T>(type, at).catch(ignoreNotFound);
  }

  list<T extends KubeObject>(type: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const at = opts.namespace !== undefined ? { namespace: opts.namespace } : {};
    return this.call<ObjectList<T>>({
      method: 'GET',
      path: resourcePath(type, at),
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
        resourceVersionMatch: opts.resourceVersionMatch,
      },
      operation: describeOperation('list', type, at),
    });
  }

  /**
   * Creates. When an earlier attempt may have been carried out although its answer was lost,
   * an AlreadyExists for an object holding everything sent is that attempt's: it is returned
   * as created (see retried-create.ts).
   */
  async create<T extends KubeObject>(
    type: ResourceType,
    obj: T | NewObject<T>,
    namespace = obj.metadata.namespace,
  ): Promise<T> {
    const at = namespace !== undefined ? { namespace } : {};
    const name = obj.metadata.name;
    let maybeCreated = false;
    try {
      return await this.call<T>({
        method: 'POST',
        path: resourcePath(type, at),
        body: obj,
        operation: describeOperation('create', type, { ...at, ...(name ? { name } : {}) }),
        onRetry: (err) => {
          maybeCreated ||= mayHaveBeenCarriedOut(err);
        },
      });
    } catch (err) {
      if (!maybeCreated || !name || !isKubeError(err, 'AlreadyExists')) throw err;
      const found = await this.find<T>(type, { ...at, name }).catch(() => undefined);
      if (found && holdsWhatWasSent({ apiVersion: apiVersionOf(type), kind: type.kind, ...obj }, found))
        return found;
      throw err;
    }
  }

  /** PUT with the object's resourceVersion: a Conflict means someone else changed it. */
  update<T extends KubeObject>(type: ResourceType, obj: T, subresource?: 'status'): Promise<T> {
    const at: ObjectPath = {
      ...(obj.metadata.namespace !== undefined ? { namespace: obj.metadata.namespace } : {}),
      name: obj.metadata.name,
      ...(subresource ? { subresource } : {}),
    };
    const refused = nameless(describeOperation('update', type, at), at.name);
    if (refused) return refused;
    return this.call<T>({
      method: 'PUT',
      path: resourcePath(type, at),
      body: obj,
      operation: describeOperation('update', type, at),
    });
  }

  patch<T extends KubeObject>(
    type: ResourceType,
    at: { namespace?: string; name: string; subresource?: string },
    patch: unknown,
    patchType: PatchType = 'merge',
  ): Promise<T> {
    const refused = nameless(describeOperation('patch', type, at), at.name);
    if (refused) return refused;
    return this.call<T>({
      method: 'PATCH',
      path: resourcePath(type, at),
      body: patch,
      contentType: PATCH_CONTENT_TYPE[patchType],
      operation: describeOperation('patch', type, at),
    });
  }

  /** Deletes; resolves false when the object was already gone. */
  async delete(
    type: ResourceType,
    at: { namespace?: string; name: string },
    opts: DeleteOptions = {},
  ): Promise<boolean> {
    return (await this.deleteObject(type, at, opts)) !== 'gone';
  }

  /**
   * Deletes and returns what the apiserver answered: the object still being deleted (it has
   * finalizers: a Foreground deletion always does), 'deleted' when it went at once, or 'gone'
   * when it did not exist.
   */
  async deleteObject<T extends KubeObject>(
    type: ResourceType,
    at: { namespace?: string; name: string },
    opts: DeleteOptions = {},
  ): Promise<T | 'deleted' | 'gone'> {
    const refused = nameless(describeOperation('delete', type, at), at.name);
    if (refused) return refused;
    const { dryRun, ...options } = opts;
    const body = { ...options, ...(dryRun ? { dryRun: ['All'] } : {}) };
    const hasBody = Object.keys(body).length > 0;
    try {
      const answer = await this.call<T | { kind?: string }>({
        method: 'DELETE',
        path: resourcePath(type, at),
        ...(hasBody ? { body: { apiVersion: 'v1', kind: 'DeleteOptions', ...body } } : {}),
        operation: describeOperation(dryRun ? 'dry-run delete' : 'delete', type, at),
      });
      return answer.kind === type.kind && 'metadata' in answer ? answer : 'deleted';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /** Opens a watch; see watch.ts for its life cycle. */
  watch<T extends KubeObject>(
    type: ResourceType,
    opts: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): { done: Promise<void>; stop: () => void } {
    this.options.onRequest?.(
      'WATCH',
      resourcePath(type, opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
    );
    const watch = openWatch<T>(this.transport, type, opts, onEvent, () => {
      this.lastOutageAt = Date.now();
    });
    return {
      done: watch.done.catch((err: unknown) => {
        this.noteOutage(err);
        throw err;
      }),
      stop: watch.stop,
    };
  }

  close(): void {
    this.transport.close();
  }
}
