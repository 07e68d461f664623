// What a kubeconfig may hold when someone else wrote it: a cloud credential's content (the
// Secret the controller reads, --harvester-kubeconfig-content and HARVESTER_KUBECONFIG_CONTENT
// in the driver, `doctor --cloud-credential`). Such content carries only inline credentials:
// a token or basic auth, client certificate and key data, CA data. Every field with which a
// kubeconfig names a file to read, a command to run or where our requests go is refused,
// checked on the parsed document before client-node sees it (client-node reads a
// `token-file` while loading, and runs `exec` and auth-provider plugins at the first request).
// The operator's own kubeconfig files (--kubeconfig, $KUBECONFIG, in-cluster) keep
// client-go's full rules (kubeconfig-loading.ts): the operator chose those, someone else wrote a credential.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  KubeconfigLoadError,
  kubeConfigFromDocument,
  parseKubeconfigDocument,
} from './kubeconfig-loading.js';

/**
 * Whose kubeconfig it is. 'credential': someone else's input (inline credentials only);
 * 'operator': written by whoever runs this program (client-go's rules, files and plugins too).
 */
export type KubeconfigTrust = 'credential' | 'operator';

/** Fields of a users[] entry's `user`, by what they would make us do (client-go and client-node names). */
const USER_FIELDS: ReadonlyMap<string, string> = new Map([
  ['token-file', 'names a file to read'],
  ['tokenfile', 'names a file to read'],
  ['client-certificate', 'names a file to read'],
  ['client-key', 'names a file to read'],
  ['exec', 'runs a command'],
  // gcp and azure run a command (through a shell), oidc sends its refresh token to its issuer.
  ['auth-provider', 'runs an auth-provider plugin'],
]);

/** Fields of a clusters[] entry's `cluster`. */
const CLUSTER_FIELDS: ReadonlyMap<string, string> = new Map([
  ['certificate-authority', 'names a file to read'],
  // Where our requests (and the credential with them) go is the operator's choice: their
  // HTTPS_PROXY / NO_PROXY, which Rancher passes to the driver's jobs.
  ['proxy-url', 'chooses the proxy our requests go through (set HTTPS_PROXY and NO_PROXY instead)'],
]);

/**
 * What follows the refused fields in the message (a phrase after "kubeconfig", as they are):
 * what a usable credential looks like.
 */
export const CREDENTIAL_CONTENT_RULE =
  "may hold only inline credentials, being a cloud credential's (token, client-certificate-data " +
  'and client-key-data, certificate-authority-data), as the ones Rancher makes do: server ' +
  'https://<rancher>/k8s/clusters/<cluster id>, certificate-authority-data and a token kubeconfig-user-…:…';

type Doc = Record<string, unknown>;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A value client-go and client-node act on: anything but absent, null or the empty string. */
const isSet = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

function refused(
  doc: Doc,
  list: 'users' | 'clusters',
  inner: 'user' | 'cluster',
  fields: ReadonlyMap<string, string>,
): string[] {
  const entries = doc[list];
  if (!Array.isArray(entries)) return [];
  const problems: string[] = [];
  entries.forEach((entry: unknown, i) => {
    const body = isObject(entry) ? entry[inner] : undefined;
    if (!isObject(body)) return;
    for (const [key, value] of Object.entries(body)) {
      // Refused in any letter case ("Exec"): client-go and client-node match names exactly,
      // but a reader that does not (Go's encoding/json) must find nothing either.
      const what = fields.get(key.toLowerCase());
      // The index only: names and values are the content's own text, of any size.
      if (what && isSet(value)) problems.push(`${list}[${i}].${inner}.${fieldName(key)} ${what}`);
    }
  });
  return problems;
}

/** The key as written when it is a plain name, else described (it is someone else's text). */
function fieldName(key: string): string {
  return /^[A-Za-z-]{1,32}$/.test(key) ? key : '(a field of that name)';
}

/**
 * Problems of a parsed kubeconfig document as credential content, as phrases that follow
 * "kubeconfig …"; empty when it holds only inline credentials. The last phrase says what a
 * usable one looks like. Never quotes a value of the content.
 */
export function credentialContentProblems(doc: Doc): string[] {
  const problems = [
    ...refused(doc, 'users', 'user', USER_FIELDS),
    ...refused(doc, 'clusters', 'cluster', CLUSTER_FIELDS),
  ];
  return problems.length > 0 ? [...problems, CREDENTIAL_CONTENT_RULE] : [];
}

/** A kubeconfig content whose fields a cloud credential may not hold; its message names each. */
export class CredentialContentError extends KubeconfigLoadError {
  constructor(readonly problems: readonly string[]) {
    super(`kubeconfig ${problems.join('; ')}`);
  }
}

/**
 * A KubeConfig for kubeconfig text under the given trust: for 'credential', nothing that
 * names a file, a command or a proxy gets past this (CredentialContentError); for
 * 'operator', client-go's rules. Parse errors are KubeconfigLoadErrors naming `where`.
 */
export function kubeConfigFor(text: string, trust: KubeconfigTrust, where = 'the kubeconfig'): KubeConfig {
  const doc = parseKubeconfigDocument(text, where);
  if (trust === 'credential') {
    const problems = credentialContentProblems(doc);
    if (problems.length > 0) throw new CredentialContentError(problems);
  }
  return kubeConfigFromDocument(doc, where);
}

/**
 * The refused fields of kubeconfig text given as a credential; [] when it holds none, or
 * when it does not parse (what is wrong with it then is reported where it is loaded).
 */
export function credentialTextProblems(text: string): string[] {
  let doc: Doc;
  try {
    doc = parseKubeconfigDocument(text, 'kubeconfig');
  } catch {
    return [];
  }
  return credentialContentProblems(doc);
}
