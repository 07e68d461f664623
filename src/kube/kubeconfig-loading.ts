// client-go's kubeconfig loading rules, in one place (docs/upstream/client-go-kubeconfig.md):
// an explicit file (--kubeconfig) is the only one read and must exist; otherwise every file
// of $KUBECONFIG (missing ones skipped) or ~/.kube/config, merged so that the first file to
// name a cluster, user or context wins it and the first to set current-context wins that;
// relative paths are taken from the directory of the file that holds them; --context
// overrides current-context; and with no file at all, the pod's service account.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseDocument, stringify } from 'yaml';
import { yamlProblem } from '../common/parse-problems.js';
import { registerSecret } from '../log/redact.js';

type Env = Readonly<Record<string, string | undefined>>;
type Doc = Record<string, unknown>;
type Named = { name?: unknown; [key: string]: unknown };

export interface LoadingRules {
  /** --kubeconfig: the only file read; it must exist. */
  explicitPath?: string;
  /** --context: replaces current-context. */
  context?: string;
  /** KUBECONFIG, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are read here. */
  env: Env;
  home?: string;
  /** Read after ~/.kube/config when $KUBECONFIG is unset (the Go driver's loader adds k3s's). */
  extraFiles?: readonly string[];
  /** Use the pod's service account: 'fallback' when no file gave a config, 'first' before the files. */
  inCluster?: 'fallback' | 'first' | false;
  /** Prefix of /var/run/secrets/kubernetes.io/serviceaccount (tests). */
  inClusterRoot?: string;
}

export interface LoadedKubeconfig {
  kubeConfig: KubeConfig;
  /** The merged kubeconfig as YAML, paths made absolute; absent for the in-cluster config. */
  content?: string;
  /** For messages, never the content: "--kubeconfig /p", "$KUBECONFIG (/a:/b)", "in-cluster service account". */
  source: string;
}

/** A kubeconfig that cannot be loaded; the message names the file and holds none of its content. */
export class KubeconfigLoadError extends Error {
  override readonly name = 'KubeconfigLoadError';
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function entries(doc: Doc, key: string): Named[] {
  const list = doc[key];
  return Array.isArray(list) ? list.filter(isObject) : [];
}

/** Parses kubeconfig YAML into a document; throws KubeconfigLoadError naming `where`. */
export function parseKubeconfigDocument(text: string, where: string): Doc {
  const parsed = parseDocument(text);
  // A warning too: an unquoted value beginning with "!" is an unknown tag, and the value read
  // would not be the one written (a token would be sent without its first character's meaning).
  const first = parsed.errors[0] ?? parsed.warnings[0];
  if (first) throw new KubeconfigLoadError(`${where}: ${yamlProblem(first)}`);
  let value: unknown;
  try {
    value = parsed.toJS();
  } catch {
    // An alias of no anchor (a value beginning with "*"); the parser's message would name it.
    throw new KubeconfigLoadError(`${where}: ${yamlProblem({ code: 'BAD_ALIAS', message: '' })}`);
  }
  if (value === null || value === undefined) return {};
  if (!isObject(value))
    throw new KubeconfigLoadError(`${where}: is not a kubeconfig (expected a YAML mapping)`);
  for (const key of ['clusters', 'users', 'contexts']) {
    const seen = new Set<unknown>();
    for (const entry of entries(value, key)) {
      // client-go refuses a file that names one entry twice.
      if (seen.has(entry.name)) {
        throw new KubeconfigLoadError(`${where}: ${key} has two entries named "${String(entry.name)}"`);
      }
      seen.add(entry.name);
    }
  }
  return value;
}

function resolve(base: string, value: unknown): unknown {
  return typeof value === 'string' && value !== '' && !path.isAbsolute(value)
    ? path.join(base, value)
    : value;
}

/** client-go's ResolveLocalPaths for a document read from a file in `baseDir`. */
export function resolvePaths(doc: Doc, baseDir: string): Doc {
  const base = path.resolve(baseDir);
  const clusters = entries(doc, 'clusters').map((c) =>
    isObject(c['cluster'])
      ? {
          ...c,
          cluster: {
            ...c['cluster'],
            'certificate-authority': resolve(base, c['cluster']['certificate-authority']),
          },
        }
      : c,
  );
  const users = entries(doc, 'users').map((u) => {
    const user = u['user'];
    if (!isObject(user)) return u;
    const out: Record<string, unknown> = { ...user };
    for (const key of ['client-certificate', 'client-key', 'token-file']) {
      if (key in out) out[key] = resolve(base, out[key]);
    }
    // An exec command is a file path only when it has a separator; otherwise $PATH finds it.
    const exec = out['exec'];
    if (isObject(exec) && typeof exec['command'] === 'string' && exec['command'].includes(path.sep)) {
      out['exec'] = { ...exec, command: resolve(base, exec['command']) };
    }
    return { ...u, user: out };
  });
  return { ...doc, ...(clusters.length ? { clusters } : {}), ...(users.length ? { users } : {}) };
}

/** client-go's merge: the first to name an entry wins it; the first current-context set wins. */
export function mergeDocuments(docs: readonly Doc[]): Doc {
  const merged: Doc = { apiVersion: 'v1', kind: 'Config' };
  for (const key of ['clusters', 'users', 'contexts']) {
    const byName = new Map<unknown, Named>();
    for (const doc of docs) for (const e of entries(doc, key)) if (!byName.has(e.name)) byName.set(e.name, e);
    merged[key] = [...byName.values()];
  }
  const current = docs.map((d) => d['current-context']).find((c) => typeof c === 'string' && c !== '');
  if (current !== undefined) merged['current-context'] = current;
  return merged;
}

function isEmpty(doc: Doc): boolean {
  return ['clusters', 'users', 'contexts'].every((k) => entries(doc, k).length === 0);
}

/**
 * A document as client-node should see it. A user's token-file becomes client-node's tokenFile
 * auth provider, which the transport reads again when the file changes (client-node itself
 * would read token-file once, relative to the working directory, when loading).
 */
export function forClientNode(doc: Doc): Doc {
  const users = entries(doc, 'users').map((u) => {
    const user = u['user'];
    if (!isObject(user) || typeof user['token-file'] !== 'string') return u;
    const { 'token-file': tokenFile, ...rest } = user;
    if (rest['token'] || rest['auth-provider']) return { ...u, user: rest };
    return { ...u, user: { ...rest, 'auth-provider': { name: 'tokenFile', config: { tokenFile } } } };
  });
  return { ...doc, users };
}

/** A KubeConfig for kubeconfig text (from a flag or a file), by the rules above. */
export function kubeConfigFromText(text: string, where = 'the kubeconfig'): KubeConfig {
  return kubeConfigFromDocument(parseKubeconfigDocument(text, where), where);
}

/** A KubeConfig for a parsed document (client-node's view of it, see forClientNode). */
export function kubeConfigFromDocument(doc: Doc, where: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(JSON.stringify(forClientNode(doc)));
  } catch (err) {
    const reason = err instanceof Error ? (err.message.split('\n')[0] ?? '') : 'unreadable';
    throw new KubeconfigLoadError(`${where}: is not a valid kubeconfig (${reason})`);
  }
  return kc;
}

function readFileOrUndefined(file: string, mustExist: boolean, what: string): string | undefined {
  try {
    const text = fs.readFileSync(file, 'utf8');
    registerSecret(text);
    return text;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !mustExist) return undefined;
    throw new KubeconfigLoadError(`${what} ${file}: cannot read the file (${code ?? String(err)})`);
  }
}

/** Whether the pod's service account is there (client-go's inClusterClientConfig.Possible). */
export function inClusterPossible(env: Env, root = ''): boolean {
  return Boolean(
    env['KUBERNETES_SERVICE_HOST'] &&
    env['KUBERNETES_SERVICE_PORT'] &&
    fs.existsSync(`${root}${SERVICE_ACCOUNT_DIR}/token`),
  );
}

/** client-node's loadFromCluster, with client-go's server URL (always https, from `env`). */
export function inClusterKubeConfig(env: Env, root = ''): KubeConfig {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) {
    throw new KubeconfigLoadError(
      'not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set',
    );
  }
  const kc = new KubeConfig();
  kc.loadFromCluster(root);
  const cluster = kc.getCurrentCluster();
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  kc.clusters = kc.clusters.map((c) => (c.name === cluster?.name ? { ...c, server } : c));
  return kc;
}

function withContext(doc: Doc, context: string | undefined, source: string): Doc {
  if (!context) return doc;
  if (!entries(doc, 'contexts').some((c) => c.name === context)) {
    const names = entries(doc, 'contexts').map((c) => String(c.name));
    throw new KubeconfigLoadError(
      `--context ${context}: no such context in ${source} (it has ${names.length ? names.join(', ') : 'none'})`,
    );
  }
  return { ...doc, 'current-context': context };
}

/** The files client-go would read, in order, and how to name them in messages. */
export function kubeconfigFiles(rules: LoadingRules): { files: string[]; source: string; explicit: boolean } {
  if (rules.explicitPath)
    return { files: [rules.explicitPath], source: `--kubeconfig ${rules.explicitPath}`, explicit: true };
  const list = rules.env['KUBECONFIG'];
  const extra = rules.extraFiles ?? [];
  if (list) {
    const files = [...new Set(list.split(path.delimiter).filter((f) => f !== ''))];
    return { files, source: `$KUBECONFIG (${list})`, explicit: false };
  }
  const home = path.join(rules.home ?? os.homedir(), '.kube', 'config');
  return { files: [home, ...extra], source: home, explicit: false };
}

/** Loads by client-go's rules; throws KubeconfigLoadError saying where it looked. */
export function loadKubeconfig(rules: LoadingRules): LoadedKubeconfig {
  const root = rules.inClusterRoot ?? '';
  const inCluster = (): LoadedKubeconfig => ({
    kubeConfig: inClusterKubeConfig(rules.env, root),
    source: 'in-cluster service account',
  });
  if (rules.inCluster === 'first' && !rules.explicitPath && inClusterPossible(rules.env, root))
    return inCluster();
  const { files, source, explicit } = kubeconfigFiles(rules);
  const docs: Doc[] = [];
  const read: string[] = [];
  for (const file of files) {
    const text = readFileOrUndefined(file, explicit, explicit ? '--kubeconfig' : 'kubeconfig');
    if (text === undefined) continue;
    docs.push(resolvePaths(parseKubeconfigDocument(text, file), path.dirname(file)));
    read.push(file);
  }
  const merged = mergeDocuments(docs);
  if (isEmpty(merged)) {
    if (rules.inCluster && inClusterPossible(rules.env, root)) return inCluster();
    throw new KubeconfigLoadError(
      `no kubeconfig: ${read.length ? `${read.join(', ')} configures nothing` : `${files.join(', ')} not found`}` +
        (rules.inCluster
          ? ', and not in a cluster (KUBERNETES_SERVICE_HOST unset or no service-account token)'
          : ''),
    );
  }
  const doc = withContext(merged, rules.context, source);
  const content = stringify(doc);
  registerSecret(content);
  return { kubeConfig: kubeConfigFromDocument(doc, source), content, source };
}

/** --context applied to kubeconfig text (content from a flag or the environment). */
export function overrideContext(content: string, context: string | undefined, source: string): string {
  if (!context) return content;
  return stringify(withContext(parseKubeconfigDocument(content, source), context, source));
}
