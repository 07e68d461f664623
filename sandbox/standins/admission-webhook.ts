// The serving side every admission-webhook stand-in shares: an HTTPS listener on 127.0.0.1 that
// answers AdmissionReviews at one path, and its registration with kube-apiserver as a
// validating or mutating configuration that names that listener by URL.
import https from 'node:https';
import type http from 'node:http';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { clusterResourceType, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import type { Logger } from '../../src/log/logger.js';
import type { KubeClient } from '../../src/kube/client.js';

/** The serving certificate (for 127.0.0.1) and the CA kube-apiserver checks it against. */
export interface WebhookServing {
  certPem: string;
  keyPem: string;
  caPem: string;
}

const CONFIG_TYPES: Record<'Validating' | 'Mutating', ResourceType> = {
  Validating: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
  ),
  Mutating: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
  ),
};

/** What one webhook stand-in serves and how it is registered. */
export interface AdmissionWebhookSpec {
  kind: 'Validating' | 'Mutating';
  /** The configuration's name, and the one webhook's name in it. */
  configName: string;
  webhookName: string;
  path: string;
  /** A review body larger than this is cut off (the connection dropped). */
  maxReviewBytes: number;
  rules: unknown[];
  admissionReviewVersions: string[];
  /** Answers one AdmissionReview body with the AdmissionReview to send back; throws on a malformed one. */
  review(body: string): unknown;
}

export interface AdmissionWebhook {
  /** Listens on 127.0.0.1 and registers (creates or replaces) the configuration; returns the port. */
  start(): Promise<number>;
  /** Deregisters first (with failurePolicy Fail nothing it reviews could pass without it), then stops serving. */
  stop(): Promise<void>;
}

/** An admission webhook served on 127.0.0.1 and registered by URL. */
export function admissionWebhook(
  client: KubeClient,
  logger: Logger,
  serving: WebhookServing,
  spec: AdmissionWebhookSpec,
): AdmissionWebhook {
  const type = CONFIG_TYPES[spec.kind];
  let server: https.Server | undefined;

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== spec.path) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > spec.maxReviewBytes) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      try {
        const answer = JSON.stringify(spec.review(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer);
      } catch (err) {
        res.writeHead(400, { 'Content-Type': 'text/plain' }).end(String(err));
      }
    });
  };

  const register = async (port: number): Promise<void> => {
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: `${spec.kind}WebhookConfiguration`,
      metadata: { name: spec.configName },
      webhooks: [
        {
          name: spec.webhookName,
          clientConfig: {
            url: `https://127.0.0.1:${port}${spec.path}`,
            caBundle: Buffer.from(serving.caPem, 'utf8').toString('base64'),
          },
          rules: spec.rules,
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: spec.admissionReviewVersions,
        },
      ],
    } as unknown as KubeObject;
    try {
      await client.create(type, config);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const current = await client.get<KubeObject>(type, { name: spec.configName });
      await client.update(type, {
        ...config,
        metadata: { ...config.metadata, resourceVersion: current.metadata.resourceVersion },
      });
    }
  };

  return {
    async start() {
      const listening = https.createServer({ cert: serving.certPem, key: serving.keyPem }, onRequest);
      server = listening;
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject);
        listening.listen(0, '127.0.0.1', () => resolve());
      });
      const port = (listening.address() as { port: number }).port;
      await register(port);
      return port;
    },
    async stop() {
      await client.delete(type, { name: spec.configName }).catch((err: unknown) => {
        logger.warn('could not deregister a webhook', { config: spec.configName, error: String(err) });
      });
      const s = server;
      server = undefined;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
      s?.closeAllConnections();
    },
  };
}
