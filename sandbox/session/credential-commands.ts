// The sandbox commands of the second seed's story (docs/upstream/seeds.md#second-report):
//   expire-token      the Rancher token in the Harvester cloud credential expires (as a
//                     generated kubeconfig's token does after 30 days by default); waits until
//                     Rancher's /k8s/clusters proxy refuses it
//   renew-credential  Cluster Management > Cloud Credentials > Renew: a new token for the
//                     same user, its kubeconfig saved into the same credential
import { parse } from 'yaml';
import { keyText } from '../../src/api/object-key.js';
import type { KubeError } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { credentialKubeconfig } from '../../src/rancher/cloud-credential.js';
import { decodeBase64OrPlain } from '../../src/kube/kubeconfig-content.js';
import { WaitTimeoutError } from '../../src/kube/wait.js';
import { untilCredentialRefused } from '../control-plane/access.js';
import {
  harvesterCloudCredential,
  rancherKubeconfig,
  saveHarvesterCloudCredential,
} from '../rancher/credentials.js';
import { RancherResources, type RancherTokenObject } from '../rancher/resources.js';
import { createRancherToken, expireRancherToken } from '../rancher/tokens.js';
import { CommandError, type Say } from './cluster-commands.js';
import type { Session } from './state.js';

const DAY = 86_400_000;

interface Credential extends KubeObject {
  data?: Record<string, string>;
}

/** The kubeconfig the cloud credential holds now, and the name of its Rancher token. */
async function currentCredential(s: Session): Promise<{ kubeconfig: string; token: string }> {
  const secret = await s.rancher.get<Credential>(Resources.secret, s.state.cloudCredential);
  const raw = credentialKubeconfig(secret);
  if (!raw)
    throw new CommandError(
      `cloud credential ${keyText(s.state.cloudCredential.namespace, s.state.cloudCredential.name)} holds no kubeconfig`,
    );
  const kubeconfig = decodeBase64OrPlain(raw.trim());
  const doc = parse(kubeconfig) as { users?: Array<{ user?: { token?: string } }> } | null;
  const token = doc?.users?.[0]?.user?.token?.split(':')[0];
  if (!token) throw new CommandError("the cloud credential's kubeconfig has no Rancher token");
  return { kubeconfig, token };
}

/** Until Rancher's proxy refuses the kubeconfig (its token check may lag a moment). */
async function untilRefused(kubeconfig: string, namespace: string, timeoutMs: number): Promise<KubeError> {
  try {
    return await untilCredentialRefused(kubeconfig, namespace, timeoutMs);
  } catch (err) {
    if (err instanceof WaitTimeoutError)
      throw new CommandError(`the expired token was still accepted after ${timeoutMs / 1000} s`);
    throw err;
  }
}

export async function expireToken(s: Session, say: Say, opts: { token?: string }): Promise<void> {
  const current = await currentCredential(s);
  const name = opts.token ?? current.token;
  const token = await s.rancher.find<RancherTokenObject>(RancherResources.token, { name });
  if (!token) throw new CommandError(`Rancher has no token ${name}`);
  const at = await expireRancherToken(s.rancher, name);
  say(
    'Rancher',
    `token ${name} (user ${token.userId}) expired at ${at.toISOString()}${name === current.token ? `; the cloud credential ${keyText(s.state.cloudCredential.namespace, s.state.cloudCredential.name)} still holds it` : ''}`,
  );
  if (name !== current.token) return;
  const refusal = await untilRefused(current.kubeconfig, s.state.seeds.namespace, 30_000);
  say('Rancher', `its /k8s/clusters/${s.state.clusterId} proxy now refuses it: ${refusal.message}`);
}

export async function renewCredential(s: Session, say: Say, opts: { ttlMs?: number }): Promise<void> {
  const current = await currentCredential(s);
  const old = await s.rancher.get<RancherTokenObject>(RancherResources.token, { name: current.token });
  const renewed = await createRancherToken(s.rancher, {
    userId: old.userId,
    ttlMs: opts.ttlMs ?? 30 * DAY,
    clusterId: s.state.clusterId,
  });
  const kubeconfig = rancherKubeconfig({
    proxyUrl: s.state.proxyUrl,
    clusterId: s.state.clusterId,
    caPem: s.state.proxyCaPem,
    token: renewed.token,
    clusterName: s.state.clusterName,
  });
  await saveHarvesterCloudCredential(
    s.rancher,
    harvesterCloudCredential({
      name: s.state.cloudCredential.name,
      kubeconfig,
      clusterId: s.state.clusterId,
      displayName: s.state.clusterName,
      ...(renewed.expiresAt ? { expiresAt: renewed.expiresAt } : {}),
    }),
  );
  say(
    'Rancher',
    `renewed cloud credential ${keyText(s.state.cloudCredential.namespace, s.state.cloudCredential.name)}: generateKubeconfig made token ${renewed.name} for the same user ${renewed.userId} (expires ${renewed.expiresAt?.toISOString() ?? 'never'}); ${current.token} stays as it was`,
  );
}
