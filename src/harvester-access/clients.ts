// Talking to Harvester through a cloud credential (and to a guest cluster through its
// kubeconfig Secret): one client per Secret version (a renewed credential gets a new client),
// and the credential probe. A version's secrets are registered for
// redaction when its client is made and released when the version is replaced or the Secret
// deleted, so that a controller running for months holds the live credentials' secrets only.
import type { Secret } from '../api/core.js';
import { KubeClient, KubeError } from '../kube/index.js';
import { decodeBase64OrPlain, KubeconfigError, kubeconfigProblems } from '../kube/kubeconfig-content.js';
import { redact, registerSecret, SecretRegistration } from '../log/redact.js';
import { credentialKubeconfig } from '../rancher/cloud-credential.js';
import { reviewSelf } from './self-review.js';

/** What a probe of a credential found: accepted, refused, or no answer. */
export type CredentialProbe = 'ok' | 'rejected' | 'unreachable';
import { keyTextOf } from '../api/object-key.js';

interface CredentialVersion {
  version: string;
  /** Undefined while it is being made, or when the content could not make one. */
  client?: KubeClient;
  secrets: SecretRegistration;
}

export interface KubeconfigClientOptions {
  requestTimeoutMs?: number;
  /** Called once per request sent through any of the clients (the guest request count). */
  onRequest?: (method: string, path: string) => void;
  /** The most one answer or watch event may hold, unpacked (a guest's apiserver: a few MiB). */
  maxResponseBytes?: number;
}

/**
 * Clients for kubeconfig content someone else wrote (inline credentials only), one
 * per object and version: a rewritten object gets a new client, and the old one's secrets are
 * released. Cloud credentials (HarvesterClients) and guest clusters' kubeconfigs use it.
 */
export class KubeconfigClients {
  private readonly clients = new Map<string, CredentialVersion>();

  constructor(private readonly options: KubeconfigClientOptions = {}) {}

  /**
   * The client for `raw` (kubeconfig text, or base64 of it) as version `version` of `key`;
   * undefined when there is no content. Throws KubeconfigError, whose message names what is
   * wrong and holds none of the content, when it cannot be used (not YAML, no current context,
   * a file, command or proxy named, ...).
   */
  forContent(key: string, version: string, raw: string | undefined): KubeClient | undefined {
    const known = this.clients.get(key);
    if (known?.version === version && known.client) return known.client;
    this.forget(key);
    if (raw === undefined) return undefined;
    // Kept even when the content makes no client: its secrets stay registered while it is current.
    const entry: CredentialVersion = { version, secrets: new SecretRegistration() };
    this.clients.set(key, entry);
    entry.client = entry.secrets.collect(() => {
      registerSecret(raw);
      const content = decodeBase64OrPlain(raw.trim());
      const problems = kubeconfigProblems(content);
      if (problems.length > 0) throw new KubeconfigError(problems);
      try {
        return KubeClient.fromKubeconfig(content, {
          requestTimeoutMs: this.options.requestTimeoutMs ?? 15_000,
          // The work queue retries with backoff; a cleanup attempt itself stays short.
          retry: { attempts: 2, baseDelayMs: 200, maxDelayMs: 1_000 },
          ...(this.options.onRequest ? { onRequest: this.options.onRequest } : {}),
          ...(this.options.maxResponseBytes !== undefined
            ? { maxResponseBytes: this.options.maxResponseBytes }
            : {}),
        });
      } catch (err) {
        // What the checks above let through (certificate data that does not parse, ...): the
        // first line of client-node's message, redacted, and never the error itself as cause.
        const reason = err instanceof Error ? (err.message.split('\n')[0] ?? '') : 'unreadable';
        throw new KubeconfigError([`cannot be loaded (${redact(reason)})`]);
      }
    });
    return entry.client;
  }

  /** The object is gone (or its version replaced): its client and secrets go. */
  forget(key: string): void {
    const known = this.clients.get(key);
    known?.client?.close();
    known?.secrets.release();
    this.clients.delete(key);
  }

  closeAll(): void {
    for (const key of [...this.clients.keys()]) this.forget(key);
  }
}

export class HarvesterClients extends KubeconfigClients {
  /**
   * The client for a credential Secret's current content; undefined when it holds no
   * kubeconfig. Throws KubeconfigError when the kubeconfig cannot be used.
   */
  forSecret(secret: Secret): KubeClient | undefined {
    const key = keyTextOf(secret);
    return this.forContent(key, secret.metadata.resourceVersion ?? '', credentialKubeconfig(secret));
  }
}

/**
 * Is the credential accepted? A SelfSubjectReview is allowed to every authenticated user
 * and costs the server nothing; any answer but "credential rejected" proves authentication.
 */
export async function probeCredential(
  client: KubeClient,
): Promise<{ result: CredentialProbe; error?: KubeError }> {
  try {
    await reviewSelf(client);
    return { result: 'ok' };
  } catch (err) {
    if (!(err instanceof KubeError)) throw err;
    if (err.kind === 'CredentialRejected') return { result: 'rejected', error: err };
    // Authenticated, only not allowed or not served: the credential itself works.
    if (['Forbidden', 'NotFound', 'MethodNotAllowed', 'BadRequest'].includes(err.kind))
      return { result: 'ok' };
    return { result: 'unreachable', error: err };
  }
}
