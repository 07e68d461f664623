// Secrets never reach a log line, an error message or a file readable by others.
// Redaction happens at the source: whoever loads a credential registers its secret
// parts here, and every log line and every error we format passes through redact().
// Pattern rules catch what was never registered (a token echoed back by a server).

const REDACTED = '[REDACTED]';
const registered = new Set<string>();

/** Registers a secret value (token, key, kubeconfig) so that it is never printed. */
export function registerSecret(value: string | undefined | null): void {
  if (!value) return;
  const trimmed = value.trim();
  // Very short values would redact ordinary words; real secrets are long.
  if (trimmed.length < 8) return;
  registered.add(trimmed);
  // A kubeconfig is registered whole and line by line (a line can reach a log alone).
  for (const line of trimmed.split('\n')) {
    const t = line.trim();
    if (t.length >= 24) registered.add(t);
  }
}

const PATTERNS: Array<[RegExp, string]> = [
  // PEM private keys and certificates' keys
  [
    /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
    `-----${REDACTED} PRIVATE KEY-----`,
  ],
  // kubeconfig fields holding secrets, in YAML or JSON form
  [
    /((?:client-key-data|token|password|client-certificate-data)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
    `$1${REDACTED}`,
  ],
  // Authorization headers
  [/(\bBearer\s+)[A-Za-z0-9._~+/=:-]+/g, `$1${REDACTED}`],
  [/(\bBasic\s+)[A-Za-z0-9+/=]{8,}/g, `$1${REDACTED}`],
  // The password of a URL's user:password@ (a proxy URL in HTTPS_PROXY or proxy-url)
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]*:)[^\s/@]+@/gi, `$1${REDACTED}@`],
  // Rancher tokens kubeconfig-u-xxx:secret / kubeconfig-user-xxx:secret / token-xxx:secret (keep the name)
  [/\b((?:kubeconfig-u|kubeconfig-user|token)-[a-z0-9]+):[A-Za-z0-9]{16,}/g, `$1:${REDACTED}`],
  // Kubernetes bootstrap tokens <id>.<secret> (keep the id)
  [/\b([a-z0-9]{6})\.[a-z0-9]{16}\b/g, `$1.${REDACTED}`],
  // SSH private keys in OpenSSH format are covered by the PEM rule; base64 kubeconfigs:
  [/\bYXBpVmVyc2lvbj[A-Za-z0-9+/=]{20,}/g, REDACTED],
];

export function redact(text: string): string {
  let out = text;
  for (const secret of registered) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);
  return out;
}

/** Test hook: forget registered secrets. */
export function clearRegisteredSecrets(): void {
  registered.clear();
}
