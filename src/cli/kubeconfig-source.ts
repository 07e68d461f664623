// Where a command that talks to Harvester without a stored machine (volumes, doctor) and
// `create` find the kubeconfig: an explicit flag first, then the environment, as kubectl.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FLAGS } from '../driver/flags.js';
import { decodeBase64OrPlain } from '../kube/kubeconfig-content.js';
import { registerSecret } from '../log/redact.js';
import { UsageError } from './errors.js';

export interface KubeconfigChoice {
  content: string;
  /** For messages: "--kubeconfig /path", "$KUBECONFIG (/path)", never the content. */
  source: string;
}

/** Reads a kubeconfig file; a missing or unreadable file is a usage error naming it. */
export function readKubeconfigFile(file: string, what: string): string {
  try {
    const content = fs.readFileSync(file, 'utf8');
    registerSecret(content);
    return content;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`${what} ${file}: cannot read the file (${code})`);
  }
}

/**
 * --kubeconfig <file>, else HARVESTER_KUBECONFIG_CONTENT (base64 or plain), else the first
 * file of $KUBECONFIG, else ~/.kube/config when it exists.
 */
export function chooseKubeconfig(
  flagFile: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  home: string = os.homedir(),
): KubeconfigChoice {
  if (flagFile)
    return { content: readKubeconfigFile(flagFile, '--kubeconfig'), source: `--kubeconfig ${flagFile}` };
  const inline = env[FLAGS.kubeconfigContent.envVar];
  if (inline && inline.trim() !== '') {
    const content = decodeBase64OrPlain(inline);
    registerSecret(inline);
    registerSecret(content);
    return { content, source: FLAGS.kubeconfigContent.envVar };
  }
  const fromEnv = env['KUBECONFIG']?.split(path.delimiter).find((f) => f !== '');
  if (fromEnv)
    return { content: readKubeconfigFile(fromEnv, '$KUBECONFIG'), source: `$KUBECONFIG (${fromEnv})` };
  const fallback = path.join(home, '.kube', 'config');
  if (fs.existsSync(fallback))
    return { content: readKubeconfigFile(fallback, 'kubeconfig'), source: fallback };
  throw new UsageError(
    `no kubeconfig for Harvester: pass --kubeconfig <file>, or set ${FLAGS.kubeconfigContent.envVar} or KUBECONFIG`,
  );
}
