// The sandbox's credentials as Harvester and Rancher hand them out: a Harvester user's own
// bootstrap-token kubeconfig, a Rancher token with the kubeconfig Rancher generates for the
// Harvester cluster, and the Harvester cloud credential that keeps one. Each is handed out only
// once the access it carries takes effect.
import type { KubeClient } from '../src/kube/client.js';
import { createTokenUser, setTokenExpiry, tokenKubeconfig, type TokenUser } from './control-plane/access.js';
import type { FrontProxy } from './proxy/front-proxy.js';
import { authorize, type Attributes } from './proxy/identity.js';
import {
  harvesterCloudCredential,
  rancherKubeconfig,
  saveHarvesterCloudCredential,
} from './rancher/credentials.js';
import { createRancherToken, newRancherUserId, type RancherToken } from './rancher/tokens.js';
import { grantDriverAccess } from './sandbox-seeds.js';

export interface DirectUser extends TokenUser {
  /** Proxy URL, the Harvester CA, this user's bootstrap token. */
  kubeconfig: string;
  /** Moves the token's expiry (the apiserver may accept it for ~10 s more: token cache). */
  setExpiry(expiresAt: Date): Promise<void>;
}

export interface SandboxRancherToken extends RancherToken {
  /** As Rancher's generateKubeconfig returns it. */
  kubeconfig: string;
}

/**
 * New RBAC reaches the authorizer through an informer a moment after it is written: waits
 * (up to 10 s) until it decides as granted, so a credential handed out works at once.
 */
async function untilAuthorized(admin: KubeClient, username: string, attributes: Attributes): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (await authorize(admin, { username, groups: ['system:authenticated'] }, attributes)) {
    if (Date.now() > deadline)
      throw new Error(`sandbox: access granted to ${username} did not take effect within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Where the credentials lead and what they name. */
export interface CredentialTarget {
  harvesterAdmin: KubeClient;
  rancherAdmin: KubeClient;
  proxy: FrontProxy;
  /** The Harvester cluster's id and display name in Rancher. */
  clusterId: string;
  clusterName: string;
  /** Namespaces a new user may drive machines in unless told otherwise. */
  namespaces: string[];
  /** The Harvester cloud credential in Rancher. */
  cloudCredentialName: string;
}

/** Hands out the sandbox's credentials. */
export interface SandboxCredentials {
  newDirectUser: (opts: { expiresAt: Date; namespaces?: string[] }) => Promise<DirectUser>;
  newRancherToken: (opts: {
    ttlMs: number;
    userId?: string;
    namespaces?: string[];
  }) => Promise<SandboxRancherToken>;
  /** Saves the token's kubeconfig as the Harvester cloud credential. */
  saveCloudCredential: (token: SandboxRancherToken) => Promise<void>;
  /** Grants a user the driver's access in more namespaces and waits until it takes effect. */
  grantDriverAccess: (username: string, namespaces: string[]) => Promise<void>;
}

/** The credential issuer for a running sandbox. */
export function sandboxCredentials(t: CredentialTarget): SandboxCredentials {
  const admin = t.harvesterAdmin;
  const untilDriverAccess = async (username: string, where: string[]): Promise<void> => {
    await untilAuthorized(admin, username, {
      resource: { verb: 'get', group: 'harvesterhci.io', resource: 'settings', name: 'server-version' },
    });
    for (const namespace of where) {
      await untilAuthorized(admin, username, {
        resource: { verb: 'create', group: 'kubevirt.io', resource: 'virtualmachines', namespace },
      });
    }
  };
  return {
    newDirectUser: async (o) => {
      const user = await createTokenUser(admin, { expiresAt: o.expiresAt });
      await grantDriverAccess(admin, user.username, o.namespaces ?? t.namespaces);
      await untilDriverAccess(user.username, o.namespaces ?? t.namespaces);
      const kubeconfig = tokenKubeconfig({
        name: t.clusterName,
        server: t.proxy.url,
        caPem: t.proxy.caPem,
        token: user.token,
      });
      const direct: DirectUser = {
        ...user,
        kubeconfig,
        setExpiry: async (expiresAt) => {
          await setTokenExpiry(admin, user, expiresAt);
          direct.expiresAt = expiresAt;
        },
      };
      return direct;
    },
    newRancherToken: async (o) => {
      const userId = o.userId ?? newRancherUserId();
      const token = await createRancherToken(t.rancherAdmin, {
        userId,
        ttlMs: o.ttlMs,
        clusterId: t.clusterId,
      });
      await grantDriverAccess(admin, userId, o.namespaces ?? t.namespaces);
      await untilAuthorized(t.rancherAdmin, userId, {
        resource: { verb: 'get', group: 'management.cattle.io', resource: 'clusters', name: t.clusterId },
      });
      await untilDriverAccess(userId, o.namespaces ?? t.namespaces);
      const kubeconfig = rancherKubeconfig({
        proxyUrl: t.proxy.url,
        clusterId: t.clusterId,
        caPem: t.proxy.caPem,
        token: token.token,
        clusterName: t.clusterName,
      });
      return { ...token, kubeconfig };
    },
    saveCloudCredential: async (token) => {
      await saveHarvesterCloudCredential(
        t.rancherAdmin,
        harvesterCloudCredential({
          name: t.cloudCredentialName,
          kubeconfig: token.kubeconfig,
          clusterId: t.clusterId,
          displayName: t.clusterName,
          ...(token.expiresAt ? { expiresAt: token.expiresAt } : {}),
        }),
      );
    },
    grantDriverAccess: async (username, more) => {
      await grantDriverAccess(admin, username, more);
      await untilDriverAccess(username, more);
    },
  };
}
