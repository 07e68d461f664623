// The controller's view of Rancher's local cluster: one Informer per kind and watched
// namespace (or one for all namespaces), read through one interface.
import { Informer, objectKey, type InformerEvent, type KubeClient } from '../kube/index.js';
import { Resources, type KubeObject, type ResourceType } from '../kube/resources.js';
import type { Logger } from '../log/logger.js';
import { slimCluster, slimHarvesterMachine, slimMachine, slimSecret } from './cache-transforms.js';
import type {
  CapiCluster,
  CapiMachine,
  HarvesterMachine,
  ProvisioningCluster,
  SecretObject,
} from './types.js';

export class Cache<T extends KubeObject> {
  private readonly informers: Array<{ namespace: string | undefined; informer: Informer<T> }>;

  constructor(
    client: KubeClient,
    type: ResourceType,
    namespaces: string[],
    logger: Logger,
    transform: (o: KubeObject) => KubeObject,
    selectors: { labelSelector?: string | undefined; fieldSelector?: string | undefined } = {},
  ) {
    const scopes = namespaces.length === 0 ? [undefined] : namespaces;
    this.informers = scopes.map((namespace) => ({
      namespace,
      informer: new Informer<T>(client, type, {
        ...(namespace !== undefined ? { namespace } : {}),
        ...(selectors.labelSelector ? { labelSelector: selectors.labelSelector } : {}),
        ...(selectors.fieldSelector ? { fieldSelector: selectors.fieldSelector } : {}),
        logger,
        transform,
      }),
    }));
  }

  on(handler: (e: InformerEvent<T>) => void): this {
    for (const { informer } of this.informers) informer.on(handler);
    return this;
  }

  async start(): Promise<void> {
    await Promise.all(this.informers.map(({ informer }) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map(({ informer }) => informer.stop()));
  }

  get(namespace: string, name: string): T | undefined {
    const key = `${namespace}/${name}`;
    for (const { namespace: ns, informer } of this.informers) {
      if (ns === undefined || ns === namespace) {
        const found = informer.get(key);
        if (found) return found;
      }
    }
    return undefined;
  }

  list(filter?: (o: T) => boolean): T[] {
    return this.informers.flatMap(({ informer }) => informer.list(filter));
  }

  get size(): number {
    return this.informers.reduce((n, { informer }) => n + informer.size, 0);
  }
}

export interface RancherCaches {
  machines: Cache<CapiMachine>;
  capiClusters: Cache<CapiCluster>;
  provisioningClusters: Cache<ProvisioningCluster>;
  harvesterMachines: Cache<HarvesterMachine>;
  credentials: Cache<SecretObject>;
}

export function createCaches(
  client: KubeClient,
  namespaces: string[],
  credentialNamespace: string,
  logger: Logger,
  credentialSelectors: { labelSelector?: string | undefined; fieldSelector?: string | undefined } = {},
): RancherCaches {
  return {
    machines: new Cache<CapiMachine>(client, Resources.capiMachine, namespaces, logger, slimMachine),
    capiClusters: new Cache<CapiCluster>(client, Resources.capiCluster, namespaces, logger, slimCluster),
    provisioningClusters: new Cache<ProvisioningCluster>(
      client,
      Resources.provisioningCluster,
      namespaces,
      logger,
      slimCluster,
    ),
    harvesterMachines: new Cache<HarvesterMachine>(
      client,
      Resources.harvesterMachine,
      namespaces,
      logger,
      slimHarvesterMachine,
    ),
    // The only Secrets the controller may read; a selector keeps the others off the wire.
    credentials: new Cache<SecretObject>(
      client,
      Resources.secret,
      [credentialNamespace],
      logger,
      slimSecret,
      credentialSelectors,
    ),
  };
}

export const keyOf = objectKey;
