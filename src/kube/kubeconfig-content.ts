// Kubeconfig content as the driver receives it (flag, environment, saved config):
// base64 or plain YAML. Decoding, validation and a secret-free description live here,
// so every place that reports on a credential says the same thing and none leaks it.
// Nothing here returns or embeds a token, password, key or the content itself.

import fs from 'node:fs';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { yamlProblem } from '../common/parse-problems.js';
import { registerSecret } from '../log/redact.js';
import { describeToken } from './credential.js';
import { credentialContentProblems, type KubeconfigTrust } from './credential-content.js';
import { kubeConfigFromDocument, parseKubeconfigDocument } from './kubeconfig-loading.js';
import { parseKubeconfigProxy } from './proxy-environment.js';
import { tokenFileOf } from './token-file.js';

// With the length a multiple of 4, this is canonical padded base64. No group is repeated:
// V8 matches a repeated group by recursion, and megabytes of input overflowed the stack.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const LOOKS_LIKE_BASE64 = /^[A-Za-z0-9+/=\s]{16,}$/;

function decodeBase64Strict(value: string): Buffer | undefined {
  // Go's base64.StdEncoding skips \r and \n; everything else must be canonical padded base64.
  const compact = value.replace(/[\r\n]/g, '');
  if (compact === '' || compact.length % 4 !== 0 || !BASE64_CHARS.test(compact)) return undefined;
  return Buffer.from(compact, 'base64');
}

/**
 * Go's stringSupportBase64, for the flags that accept base64 (kubeconfig-content,
 * vm-affinity, user-data, network-data): valid padded standard base64 is decoded,
 * anything else is taken as it is. One deliberate difference: bytes that are not UTF-8
 * text are not a decoding (a plain value that happens to be base64-shaped stays plain).
 */
export function decodeBase64OrPlain(value: string): string {
  const bytes = decodeBase64Strict(value);
  if (!bytes) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return value;
  }
}

export type KubeconfigAuthKind = 'token' | 'client-cert' | 'exec' | 'basic' | 'none';

export interface KubeconfigDescription {
  /** API server URL, without any user:password part. */
  server: string;
  contextName: string;
  /** Name of the kubeconfig `users[]` entry (not a secret). */
  userName: string;
  /**
   * The public half of the token when it has one: "kubeconfig-u-abc12" of a Rancher token
   * "kubeconfig-u-abc12:<secret>", the id of a bootstrap token "<id>.<secret>", or
   * "system:serviceaccount:<ns>:<name>" of a service-account JWT.
   */
  tokenName?: string;
  /** Expiry of a JWT token (its `exp` claim), when it has one. */
  tokenExpiresAt?: Date;
  authKind: KubeconfigAuthKind;
}

/** A kubeconfig that cannot be used; the message holds no part of the content. */
export class KubeconfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`kubeconfig ${problems.join('; ')}`);
    this.name = 'KubeconfigError';
  }
}

/** Structural checks before @kubernetes/client-node sees it (it reports a non-mapping as empty). */
function parseProblems(text: string): string[] {
  if (text.trim() === '') return ['is empty'];
  const doc = parseDocument(text);
  // An unresolved tag is only a warning to `yaml`, but client-node's parser fails on it.
  const firstError = doc.errors[0] ?? doc.warnings.find((w) => w.code === 'TAG_RESOLVE_FAILED');
  if (firstError) return [yamlProblem(firstError)];
  let value: unknown;
  try {
    value = doc.toJS();
  } catch {
    // An alias of no anchor (a value beginning with "*"); the message would name it.
    return [yamlProblem({ code: 'BAD_ALIAS', message: '' })];
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return LOOKS_LIKE_BASE64.test(text.trim())
      ? ['looks like base64 but is not valid base64 (truncated or corrupted?)']
      : ['is not a kubeconfig (expected a YAML mapping with clusters, contexts and users)'];
  }
  return [];
}

function serverProblem(server: string, skipTLSVerify: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return 'has a cluster server that is not a valid URL (expected https://host[:port][/path])';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return `has a cluster server with scheme "${url.protocol}" (expected https:// or http://)`;
  }
  if (url.hostname === '') return 'has a cluster server URL without a host';
  // client-node refuses plain HTTP otherwise, at the first request and without naming the flag.
  if (url.protocol === 'http:' && !skipTLSVerify) {
    return 'has an http:// cluster server without insecure-skip-tls-verify: true (use https://)';
  }
  return undefined;
}

function readable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

interface Loaded {
  kc: KubeConfig;
  problems: string[];
}

function load(text: string, trust: KubeconfigTrust): Loaded {
  // Registered before anything reads it: whatever a parser echoes of it is redacted.
  registerSecret(text);
  let kc = new KubeConfig();
  const problems = parseProblems(text);
  if (problems.length > 0) return { kc, problems };
  try {
    const doc = parseKubeconfigDocument(text, 'kubeconfig');
    // Before client-node sees it: loading alone would read a token-file.
    const refused = trust === 'credential' ? credentialContentProblems(doc) : [];
    if (refused.length > 0) return { kc, problems: refused };
    // client-node's own messages name the entry ("users[0].name is missing").
    kc = kubeConfigFromDocument(doc, 'kubeconfig');
  } catch (err) {
    const reason = err instanceof Error ? err.message.replace(/^kubeconfig: /, '') : 'unreadable';
    return { kc, problems: [reason] };
  }
  const contextName = kc.getCurrentContext();
  if (!contextName) return { kc, problems: ['has no current-context'] };
  const context = kc.getContextObject(contextName);
  if (!context)
    return { kc, problems: [`has current-context "${contextName}", but no context of that name`] };
  const cluster = kc.getCluster(context.cluster);
  if (!cluster) {
    problems.push(`context "${contextName}" names cluster "${context.cluster}", which is not in clusters`);
  } else {
    const bad = serverProblem(cluster.server, cluster.skipTLSVerify);
    if (bad) problems.push(bad);
    if (cluster.proxyUrl) {
      const proxy = parseKubeconfigProxy(cluster.proxyUrl);
      if (typeof proxy === 'string') problems.push(`has a cluster ${proxy}`);
    }
  }
  if (!context.user) problems.push(`context "${contextName}" names no user`);
  else if (!kc.getUser(context.user)) {
    problems.push(`context "${contextName}" names user "${context.user}", which is not in users`);
  } else {
    const tokenFile = tokenFileOf(kc.getUser(context.user));
    if (tokenFile && !readable(tokenFile)) {
      problems.push(`user "${context.user}" has token-file ${tokenFile}, which cannot be read`);
    }
  }
  return { kc, problems };
}

/**
 * Problems of a decoded kubeconfig, as phrases that follow "kubeconfig …"; empty when usable.
 * `trust` is whose it is (credential-content.ts): by default someone else's, which may hold
 * inline credentials only.
 */
export function kubeconfigProblems(text: string, trust: KubeconfigTrust = 'credential'): string[] {
  return load(text, trust).problems;
}

/** A validated KubeConfig for the decoded content; throws KubeconfigError. */
export function loadKubeconfig(text: string, trust: KubeconfigTrust = 'credential'): KubeConfig {
  const { kc, problems } = load(text, trust);
  if (problems.length > 0) throw new KubeconfigError(problems);
  return kc;
}

function serverWithoutUserinfo(server: string): string {
  try {
    const url = new URL(server);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return '(invalid URL)';
  }
}

function authKindOf(user: User | null): KubeconfigAuthKind {
  if (user?.token || tokenFileOf(user)) return 'token';
  if (user?.certData || user?.certFile) return 'client-cert';
  // auth-provider plugins (deprecated) run outside the driver just like exec plugins.
  if (user?.exec || user?.authProvider) return 'exec';
  if (user?.username && user.password) return 'basic';
  return 'none';
}

/** Describes a decoded kubeconfig without any secret; throws KubeconfigError when unusable. */
export function describeKubeconfig(
  text: string,
  trust: KubeconfigTrust = 'credential',
): KubeconfigDescription {
  const kc = loadKubeconfig(text, trust);
  const contextName = kc.getCurrentContext();
  const context = kc.getContextObject(contextName);
  const cluster = context ? kc.getCluster(context.cluster) : null;
  const user = context?.user ? kc.getUser(context.user) : null;
  const description: KubeconfigDescription = {
    server: serverWithoutUserinfo(cluster?.server ?? ''),
    contextName,
    userName: user?.name ?? '',
    authKind: 'none',
  };
  description.authKind = authKindOf(user);
  if (user?.token) {
    const { name, expiresAt } = describeToken(user.token);
    if (name) description.tokenName = name;
    if (expiresAt) description.tokenExpiresAt = expiresAt;
  }
  return description;
}
