// What a kubeconfig's credential is, without its secret: the name of the token,
// the certificate's subject, and when it expires if the credential itself says so.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { CredentialDescription } from './errors.js';
import { registerSecret } from '../log/redact.js';
import { tokenFileOf } from './token-file.js';

/** The names Rancher gives its tokens: kubeconfig-u-…, kubeconfig-user-…, token-…. */
const RANCHER_TOKEN_NAME = /^(?:kubeconfig-u|kubeconfig-user|token)-/;
const RANCHER_TOKEN = new RegExp(`^(${RANCHER_TOKEN_NAME.source.slice(1)}[a-z0-9]+):`);
/** `<name>:<secret>`, the shape of Rancher's and similar named tokens. */
const NAMED_TOKEN = /^([a-z0-9][a-z0-9-]*):[^:\s]+$/;
const BOOTSTRAP_TOKEN = /^([a-z0-9]{6})\.[a-z0-9]{16}$/;

/** The public parts of a bearer token; the one parser every description is made from. */
export interface TokenFacts {
  kind: 'rancher' | 'named' | 'bootstrap' | 'jwt' | 'opaque';
  /** Rancher or named token name, bootstrap token id. */
  name?: string;
  /** JWT `sub`. */
  subject?: string;
  /** `system:serviceaccount:<ns>:<name>` of a service-account JWT. */
  serviceAccount?: string;
  expiresAt?: Date;
}

export function parseToken(raw: string): TokenFacts {
  const token = raw.trim();
  const rancher = RANCHER_TOKEN.exec(token);
  if (rancher?.[1]) return { kind: 'rancher', name: rancher[1] };
  const named = NAMED_TOKEN.exec(token);
  if (named?.[1]) return { kind: 'named', name: named[1] };
  const bootstrap = BOOTSTRAP_TOKEN.exec(token);
  if (bootstrap?.[1]) return { kind: 'bootstrap', name: bootstrap[1] };
  const claims = decodeJwtClaims(token);
  if (!claims) return { kind: 'opaque' };
  const facts: TokenFacts = { kind: 'jwt' };
  if (typeof claims['sub'] === 'string') facts.subject = claims['sub'];
  const serviceAccount = serviceAccountOf(claims);
  if (serviceAccount) facts.serviceAccount = serviceAccount;
  if (typeof claims['exp'] === 'number') facts.expiresAt = new Date(claims['exp'] * 1000);
  return facts;
}

/** Whether a token name is one Rancher gives (so Rancher's Token object may say more of it). */
export function isRancherTokenName(name: string): boolean {
  return RANCHER_TOKEN_NAME.test(name);
}

/** A bearer token by its public part; never any of the secret half. */
export interface TokenDescription {
  /** For a sentence: "Rancher token kubeconfig-u-abc12", "bootstrap token abcdef", a JWT's subject. */
  identity: string;
  /**
   * The name the token goes by, when it has one: "kubeconfig-u-abc12" of a Rancher token
   * "kubeconfig-u-abc12:<secret>", the id of a bootstrap token "<id>.<secret>", or
   * "system:serviceaccount:<ns>:<name>" of a service-account JWT.
   */
  name?: string;
  /** A JWT's `exp` claim, when it has one. */
  expiresAt?: Date;
}

/** Describes a bearer token: the one description error messages and kubeconfig reports share. */
export function describeToken(token: string): TokenDescription {
  const facts = parseToken(token);
  const name = facts.kind === 'jwt' ? facts.serviceAccount : facts.name;
  const identity = identityOf(facts);
  return {
    identity,
    ...(name ? { name } : {}),
    ...(facts.kind === 'jwt' && facts.expiresAt ? { expiresAt: facts.expiresAt } : {}),
  };
}

function identityOf(facts: TokenFacts): string {
  switch (facts.kind) {
    case 'rancher':
      return `Rancher token ${facts.name ?? ''}`;
    case 'bootstrap':
      return `bootstrap token ${facts.name ?? ''}`;
    case 'jwt':
      return facts.subject ?? 'a JWT bearer token';
    case 'named':
    case 'opaque':
      return 'a bearer token';
  }
}

function decodeJwtClaims(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return claims !== null && typeof claims === 'object' ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function serviceAccountOf(claims: Record<string, unknown>): string | undefined {
  const k8s = claims['kubernetes.io'] as
    { namespace?: unknown; serviceaccount?: { name?: unknown } } | undefined;
  if (typeof k8s?.namespace === 'string' && typeof k8s.serviceaccount?.name === 'string') {
    return `system:serviceaccount:${k8s.namespace}:${k8s.serviceaccount.name}`;
  }
  const sub = claims['sub'];
  return typeof sub === 'string' && sub.startsWith('system:serviceaccount:') ? sub : undefined;
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
  if (user.token) {
    const { identity, expiresAt } = describeToken(user.token);
    return expiresAt ? { server, identity, expiresAt } : { server, identity };
  }
  const tokenFile = tokenFileOf(user);
  if (tokenFile) {
    // Described as the file holds it now; the transport reads it again when it rotates.
    let token: string;
    try {
      token = fs.readFileSync(tokenFile, 'utf8').trim();
    } catch {
      return { server, identity: `the token in ${tokenFile} (unreadable)` };
    }
    registerSecret(token);
    const { identity, expiresAt } = describeToken(token);
    const described = `${identity} (token file ${tokenFile})`;
    return expiresAt ? { server, identity: described, expiresAt } : { server, identity: described };
  }
  if (user.certData || user.certFile) {
    try {
      const pem = user.certData ? Buffer.from(user.certData, 'base64') : fs.readFileSync(user.certFile ?? '');
      const cert = new X509Certificate(pem);
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
