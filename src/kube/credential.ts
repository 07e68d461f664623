// What a kubeconfig's credential is, without its secret: the name of the token,
// the certificate's subject, and when it expires if the credential itself says so.
import { X509Certificate } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { CredentialDescription } from './errors.js';
import { registerSecret } from '../log/redact.js';

const RANCHER_TOKEN = /^((?:kubeconfig-u|kubeconfig-user|token)-[a-z0-9]+):/;
const BOOTSTRAP_TOKEN = /^([a-z0-9]{6})\.[a-z0-9]{16}$/;

/** Describes a bearer token by its public part. */
export function describeToken(token: string): { identity: string; expiresAt?: Date } {
  const rancher = RANCHER_TOKEN.exec(token);
  if (rancher) return { identity: `Rancher token ${rancher[1]}` };
  const bootstrap = BOOTSTRAP_TOKEN.exec(token);
  if (bootstrap) return { identity: `bootstrap token ${bootstrap[1]}` };
  const jwt = decodeJwtClaims(token);
  if (jwt) {
    const identity = typeof jwt.sub === 'string' ? jwt.sub : 'a JWT bearer token';
    return typeof jwt.exp === 'number' ? { identity, expiresAt: new Date(jwt.exp * 1000) } : { identity };
  }
  return { identity: 'a bearer token' };
}

function decodeJwtClaims(token: string): { sub?: unknown; exp?: unknown } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    return claims && typeof claims === 'object' ? claims : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Describes the current user of a kubeconfig and registers its secrets for redaction,
 * so that nothing loaded through here can reach a log line.
 */
export function describeCredential(kc: KubeConfig): CredentialDescription {
  const server = kc.getCurrentCluster()?.server ?? '(no server)';
  const user = kc.getCurrentUser();
  if (!user) return { server };
  registerSecret(user.token);
  registerSecret(user.password);
  registerSecret(user.keyData);
  if (user.token) return { server, ...describeToken(user.token) };
  if (user.certData) {
    try {
      const cert = new X509Certificate(Buffer.from(user.certData, 'base64'));
      const cn = /CN=([^\n,]+)/.exec(cert.subject)?.[1];
      return {
        server,
        identity: `client certificate ${cn ?? cert.subject}`,
        expiresAt: new Date(cert.validTo),
      };
    } catch {
      return { server, identity: 'a client certificate' };
    }
  }
  if (user.exec)
    return { server, identity: `exec plugin ${String((user.exec as { command?: unknown }).command)}` };
  if (user.username) return { server, identity: `user ${user.username}` };
  return { server, identity: user.name };
}
