// Where a command that talks to Harvester without a stored machine (volumes, doctor) and
// `create` find the kubeconfig: an explicit flag first, then the environment, by client-go's
// loading rules (src/kube/kubeconfig-loading.ts), with --context over current-context.
import os from 'node:os';
import { FLAGS } from '../driver/config/flags.js';
import { credentialTextProblems, type KubeconfigTrust } from '../kube/credential-content.js';
import { decodeBase64OrPlain } from '../kube/kubeconfig-content.js';
import {
  KubeconfigLoadError,
  loadKubeconfig,
  overrideContext as overrideContextIn,
} from '../kube/kubeconfig-loading.js';
import { registerSecret } from '../log/redact.js';
import { UsageError } from './errors.js';

export interface KubeconfigChoice {
  content: string;
  /** For messages: "--kubeconfig /path", "$KUBECONFIG (/path)", never the content. */
  source: string;
  /** A file of the operator's, or credential content (HARVESTER_KUBECONFIG_CONTENT). */
  trust: KubeconfigTrust;
}

/**
 * Kubeconfig content given as --harvester-kubeconfig-content or HARVESTER_KUBECONFIG_CONTENT
 * is a cloud credential's, as in the driver: refused, naming `source`, when it names a file,
 * a command or a proxy. A kubeconfig of the operator's own with those goes by --kubeconfig.
 */
export function checkCredentialContent(content: string, source: string): void {
  const problems = credentialTextProblems(decodeBase64OrPlain(content.trim()));
  if (problems.length > 0)
    throw new UsageError(
      `${source}: the kubeconfig ${problems.join('; ')}. A kubeconfig of your own that needs them goes by --kubeconfig <file>`,
    );
}

function usage<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof KubeconfigLoadError) throw new UsageError(err.message);
    throw err;
  }
}

/** --context over kubeconfig content given inline; an unknown context is a usage error. */
export function overrideContext(content: string, context: string | undefined, source: string): string {
  return usage(() => overrideContextIn(content, context, source));
}

/**
 * Reads a kubeconfig file as client-go does (relative paths taken from its directory, --context
 * applied); a missing or unreadable file is a usage error naming it.
 */
export function readKubeconfigFile(file: string, what: string, context?: string): string {
  const loaded = usage(() =>
    loadKubeconfig({ explicitPath: file, env: {}, ...(context ? { context } : {}) }),
  );
  if (loaded.content === undefined) throw new UsageError(`${what} ${file}: holds no kubeconfig`);
  return loaded.content;
}

/**
 * --kubeconfig <file>, else HARVESTER_KUBECONFIG_CONTENT (base64 or plain), else client-go's
 * files: every file of $KUBECONFIG merged, or ~/.kube/config.
 */
export function chooseKubeconfig(
  flagFile: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  home: string = os.homedir(),
  context?: string,
): KubeconfigChoice {
  if (flagFile) {
    return {
      content: readKubeconfigFile(flagFile, '--kubeconfig', context),
      source: `--kubeconfig ${flagFile}`,
      trust: 'operator',
    };
  }
  const inline = env[FLAGS.kubeconfigContent.envVar];
  if (inline && inline.trim() !== '') {
    const content = decodeBase64OrPlain(inline);
    registerSecret(inline);
    registerSecret(content);
    const source = FLAGS.kubeconfigContent.envVar;
    checkCredentialContent(content, source);
    return { content: overrideContext(content, context, source), source, trust: 'credential' };
  }
  try {
    const loaded = loadKubeconfig({ env, home, ...(context ? { context } : {}) });
    if (loaded.content !== undefined)
      return { content: loaded.content, source: loaded.source, trust: 'operator' };
  } catch (err) {
    if (!(err instanceof KubeconfigLoadError) || !/^no kubeconfig/.test(err.message)) {
      throw err instanceof KubeconfigLoadError ? new UsageError(err.message) : err;
    }
  }
  throw new UsageError(
    `no kubeconfig for Harvester: pass --kubeconfig <file>, or set ${FLAGS.kubeconfigContent.envVar} or KUBECONFIG`,
  );
}
