// Secrets never reach a log line, an error message or a file readable by others.
// Redaction happens at the source: whoever loads a credential registers its secret
// parts here, and every log line and every error we format passes through redact().
// Pattern rules catch what was never registered (a token echoed back by a server).
//
// A long-running process (the controller) loads credential after credential: what it
// registers for one credential version is collected in a SecretRegistration, released
// when that version is replaced or deleted, so the registry holds the live ones only.

const REDACTED = '[REDACTED]';
/** Registered for the life of the process (a driver's or CLI's own credential, keys). */
const permanent = new Set<string>();
/** Held by registrations: how many hold each value. */
const held = new Map<string, number>();
/** Every registered secret, longest first (a secret can hold a shorter one); rebuilt on change. */
let longestFirst: string[] | undefined;
/** The registrations whose collect() is running, innermost last: it gets what registerSecret receives. */
const collecting: SecretRegistration[] = [];

/** The values a secret is registered as: whole, and a kubeconfig line by line (a line can reach a log alone). */
function forms(value: string | undefined | null): string[] {
  if (!value) return [];
  const trimmed = value.trim();
  // Very short values would redact ordinary words; real secrets are long.
  if (trimmed.length < 8) return [];
  const out = [trimmed];
  for (const line of trimmed.split('\n')) {
    const t = line.trim();
    if (t.length >= 24 && t !== trimmed) out.push(t);
  }
  return out;
}

/**
 * Registers a secret value (token, key, kubeconfig) so that it is never printed: for the
 * process, or, while a SecretRegistration's collect() runs, until that registration is released.
 */
export function registerSecret(value: string | undefined | null): void {
  const values = forms(value);
  if (values.length === 0) return;
  const registration = collecting.at(-1);
  if (registration) registration.add(values);
  else for (const v of values) permanent.add(v);
  longestFirst = undefined;
}

/** The secrets of one credential version: registered while collect() runs, dropped by release(). */
export class SecretRegistration {
  private readonly values = new Set<string>();
  private released = false;

  /** Runs a synchronous fn; every secret it registers (at any depth) belongs to this registration. */
  collect<T>(fn: () => T): T {
    if (this.released) throw new Error('SecretRegistration: already released');
    collecting.push(this);
    try {
      const result = fn();
      if (typeof (result as { then?: unknown } | undefined)?.then === 'function') {
        throw new Error('SecretRegistration.collect takes a synchronous function');
      }
      return result;
    } finally {
      collecting.pop();
    }
  }

  /** @internal registerSecret's side. */
  add(values: readonly string[]): void {
    for (const v of values) {
      if (this.values.has(v)) continue;
      this.values.add(v);
      held.set(v, (held.get(v) ?? 0) + 1);
    }
  }

  /** Forgets this registration's secrets (those no one else holds); idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const v of this.values) {
      const count = (held.get(v) ?? 1) - 1;
      if (count > 0) held.set(v, count);
      else held.delete(v);
    }
    this.values.clear();
    longestFirst = undefined;
  }
}

/** How many distinct secret values are registered (for tests and the controller's metrics). */
export function registeredSecretCount(): number {
  let n = permanent.size;
  for (const v of held.keys()) if (!permanent.has(v)) n++;
  return n;
}

// Base64 of at least 8 characters, whole (not the start of a longer word), bounded: a
// repeated group is matched by recursion, and a long run must not overflow the stack.
const BASE64_WORD = '(?:[A-Za-z0-9+/]{4}){2,1024}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![A-Za-z0-9+/=])';

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
  // Authorization headers, whatever the scheme (the scheme is kept)
  [
    /(\bauthorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|digest|negotiate|token)\s+)?)[^\s"',}]+/gi,
    `$1${REDACTED}`,
  ],
  [/(\bBearer\s+)[A-Za-z0-9._~+/=:-]+/g, `$1${REDACTED}`],
  [new RegExp(`(\\bBasic\\s+)${BASE64_WORD}`, 'g'), `$1${REDACTED}`],
  // JWTs (service-account and OIDC tokens): header and payload are base64url JSON objects
  [/\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // The password of a URL's user:password@ (a proxy URL in HTTPS_PROXY or proxy-url)
  // (up to the authority's last "@": a password may hold "@" itself, as Go's parser allows)
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]*:)[^\s/?#"',]*@/gi, `$1${REDACTED}@`],
  // Rancher tokens kubeconfig-u-xxx:secret / kubeconfig-user-xxx:secret / token-xxx:secret (keep the name)
  [/\b((?:kubeconfig-u|kubeconfig-user|token)-[a-z0-9]+):[A-Za-z0-9]{16,}/g, `$1:${REDACTED}`],
  // Kubernetes bootstrap tokens <id>.<secret> (keep the id)
  [/\b([a-z0-9]{6})\.[a-z0-9]{16}\b/g, `$1.${REDACTED}`],
  // SSH private keys in OpenSSH format are covered by the PEM rule; base64 kubeconfigs:
  [/\bYXBpVmVyc2lvbj[A-Za-z0-9+/=]{20,}/g, REDACTED],
];

export function redact(text: string): string {
  let out = text;
  longestFirst ??= [...new Set([...permanent, ...held.keys()])].sort((a, b) => b.length - a.length);
  for (const secret of longestFirst) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);
  return out;
}

/** Test hook: forget registered secrets (the process's and every registration's). */
export function clearRegisteredSecrets(): void {
  permanent.clear();
  held.clear();
  longestFirst = undefined;
}
