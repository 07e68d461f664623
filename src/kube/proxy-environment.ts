// Which proxy a request to the apiserver takes, by the rules Go's http.ProxyFromEnvironment
// applies (golang.org/x/net/http/httpproxy, see docs/upstream/client-go-proxies.md): the
// kubeconfig cluster's proxy-url for every request, else HTTPS_PROXY / HTTP_PROXY by the
// server's scheme unless NO_PROXY matches, and never for localhost or a loopback address.
// Pure: the environment and the kubeconfig are passed in.

/** A proxy to use, and where it was configured (for error messages). */
export interface ProxyChoice {
  url: URL;
  /** "kubeconfig proxy-url", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy". */
  source: string;
}

export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

/** Go's getEnvAny: the upper-case name wins when it is set and not empty. */
function envAny(env: Env, names: readonly string[]): { value: string; name: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value) return { value, name };
  }
  return undefined;
}

const ENV_PROXY_SCHEMES = new Set(['http:', 'https:', 'socks5:', 'socks5h:']);
/** client-go's parseProxyURL accepts these for a kubeconfig's proxy-url. */
const KUBECONFIG_PROXY_SCHEMES = new Set(['http:', 'https:', 'socks5:']);

function tryUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/**
 * Go's parseProxy: a full URL, or "host[:port]" taken as http://host[:port]. Unlike Go, which
 * silently goes direct when the value cannot be used, a bad value is an error naming the variable.
 */
export function parseEnvironmentProxy(value: string, variable: string): URL {
  let url = tryUrl(value);
  if (!url || url.host === '' || url.protocol === '') url = tryUrl(`http://${value}`) ?? url;
  if (!url || url.host === '') {
    throw new ProxyConfigError(`${variable}: "${describeProxyValue(value)}" is not a proxy URL`);
  }
  if (!ENV_PROXY_SCHEMES.has(url.protocol)) {
    throw new ProxyConfigError(
      `${variable}: scheme "${url.protocol.slice(0, -1)}" is not supported (http, https, socks5)`,
    );
  }
  return url;
}

/** client-go's rule for a kubeconfig cluster's proxy-url; returns a problem phrase or the URL. */
export function parseKubeconfigProxy(value: string): URL | string {
  const url = tryUrl(value);
  if (!url) return `proxy-url "${describeProxyValue(value)}" is not a URL`;
  if (!KUBECONFIG_PROXY_SCHEMES.has(url.protocol)) {
    return `proxy-url scheme "${url.protocol.slice(0, -1)}" is not http, https or socks5`;
  }
  if (url.hostname === '') return `proxy-url "${describeProxyValue(value)}" has no host`;
  return url;
}

/** A proxy URL for messages: scheme, host and port, never its user or password. */
export function describeProxy(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/**
 * A proxy setting as typed, for messages: the user:password part removed. The authority runs
 * from after "//" (or the start, for "host:port") to the first "/", "?" or "#", and its
 * userinfo ends at its last "@", as Go's url.Parse and the WHATWG parser split it: a password
 * may hold "@" itself.
 */
function describeProxyValue(value: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(value)?.[0] ?? '';
  const rest = value.slice(scheme.length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  return at < 0 ? value : scheme + rest.slice(at + 1);
}

/**
 * The proxy for requests to `server`: the kubeconfig's proxy-url for every request (loopback
 * too: client-go sets it as the transport's only proxy), else the environment's by Go's rules.
 */
export function chooseProxy(
  server: URL,
  kubeconfigProxyUrl: string | undefined,
  env: Env,
): ProxyChoice | undefined {
  if (kubeconfigProxyUrl) {
    const parsed = parseKubeconfigProxy(kubeconfigProxyUrl);
    if (typeof parsed === 'string') throw new ProxyConfigError(`kubeconfig cluster: ${parsed}`);
    return { url: parsed, source: 'kubeconfig proxy-url' };
  }
  return environmentProxy(server, env);
}

/** Go's ProxyFromEnvironment for one request URL (REQUEST_METHOD's CGI rule left out). */
export function environmentProxy(target: URL, env: Env): ProxyChoice | undefined {
  const setting =
    target.protocol === 'https:'
      ? envAny(env, ['HTTPS_PROXY', 'https_proxy'])
      : target.protocol === 'http:'
        ? envAny(env, ['HTTP_PROXY', 'http_proxy'])
        : undefined;
  if (!setting) return undefined;
  const noProxy = envAny(env, ['NO_PROXY', 'no_proxy'])?.value ?? '';
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  if (!useProxy(unbracket(target.hostname), port, parseNoProxy(noProxy))) return undefined;
  return { url: parseEnvironmentProxy(setting.value, setting.name), source: setting.name };
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

type Matcher =
  | { kind: 'all' }
  | { kind: 'cidr'; network: Uint8Array; bits: number }
  | { kind: 'ip'; ip: Uint8Array; port: string }
  | { kind: 'domain'; suffix: string; port: string; matchHost: boolean };

/** Go's NO_PROXY parsing: comma-separated, trimmed, lower-cased, malformed entries ignored. */
export function parseNoProxy(noProxy: string): Matcher[] {
  const matchers: Matcher[] = [];
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return [{ kind: 'all' }];
    const cidr = parseCidr(entry);
    if (cidr) {
      matchers.push({ kind: 'cidr', ...cidr });
      continue;
    }
    let host = entry;
    let port = '';
    const split = splitHostPort(entry);
    if (split) {
      if (split.host === '') continue;
      host = split.host;
      port = split.port;
    }
    const ip = parseIp(host);
    if (ip) {
      matchers.push({ kind: 'ip', ip, port });
      continue;
    }
    if (host === '') continue;
    if (host.startsWith('*.')) host = host.slice(1);
    const matchHost = !host.startsWith('.');
    const suffix = toAscii(matchHost ? `.${host}` : host);
    matchers.push({ kind: 'domain', suffix, port, matchHost });
  }
  return matchers;
}

function toAscii(domain: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(domain)) return domain;
  try {
    return new URL(`http://x${domain}`).hostname.slice(1);
  } catch {
    return domain;
  }
}

/** Go's useProxy: host without brackets, port always given. */
export function useProxy(host: string, port: string, matchers: readonly Matcher[]): boolean {
  if (host === 'localhost') return false;
  const ip = parseIp(host, true);
  if (ip && isLoopback(ip)) return false;
  const name = host.trim().toLowerCase();
  for (const m of matchers) {
    switch (m.kind) {
      case 'all':
        return false;
      case 'cidr':
        if (ip && inNetwork(ip, m.network, m.bits)) return false;
        break;
      case 'ip':
        if (ip && sameIp(ip, m.ip) && (m.port === '' || m.port === port)) return false;
        break;
      case 'domain':
        if (!ip && (name.endsWith(m.suffix) || (m.matchHost && name === m.suffix.slice(1)))) {
          if (m.port === '' || m.port === port) return false;
        }
        break;
    }
  }
  return true;
}

/** Go's net.SplitHostPort; undefined where Go returns an error. */
export function splitHostPort(hostport: string): { host: string; port: string } | undefined {
  const i = hostport.lastIndexOf(':');
  if (i < 0) return undefined;
  let host: string;
  let j = 0;
  let k = 0;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0 || end + 1 !== i) return undefined;
    host = hostport.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) return undefined;
  }
  if (hostport.slice(j).includes('[') || hostport.slice(k).includes(']')) return undefined;
  return { host, port: hostport.slice(i + 1) };
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let n = 0; n < 4; n++) {
    const part = parts[n] ?? '';
    // Go's ParseIP rejects leading zeros (ambiguous octal).
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    bytes[n] = Number(part);
  }
  return bytes;
}

function parseIpv6(text: string, allowZone: boolean): Uint8Array | undefined {
  let addr = text;
  const zone = addr.indexOf('%');
  if (zone >= 0) {
    if (!allowZone) return undefined;
    addr = addr.slice(0, zone);
  }
  const halves = addr.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string): number[] | undefined => {
    if (half === '') return [];
    const out: number[] = [];
    const pieces = half.split(':');
    for (let n = 0; n < pieces.length; n++) {
      const piece = pieces[n] ?? '';
      if (n === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece);
        if (!v4) return undefined;
        out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(piece)) return undefined;
        out.push(parseInt(piece, 16));
      }
    }
    return out;
  };
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((g, n) => {
    bytes[2 * n] = g >> 8;
    bytes[2 * n + 1] = g & 0xff;
  });
  return bytes;
}

/** Go's net.ParseIP (zones only with allowZone, as netip.ParseAddr takes them for hosts). */
export function parseIp(text: string, allowZone = false): Uint8Array | undefined {
  return text.includes(':') ? parseIpv6(text, allowZone) : parseIpv4(text);
}

/** An IPv4-mapped IPv6 address as its 4 bytes, as Go's To4 does. */
function canonical(ip: Uint8Array): Uint8Array {
  if (ip.length === 16 && ip.slice(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff) {
    return ip.slice(12);
  }
  return ip;
}

function isLoopback(ip: Uint8Array): boolean {
  const c = canonical(ip);
  if (c.length === 4) return c[0] === 127;
  return c.slice(0, 15).every((b) => b === 0) && c[15] === 1;
}

function sameIp(a: Uint8Array, b: Uint8Array): boolean {
  const x = canonical(a);
  const y = canonical(b);
  return x.length === y.length && x.every((v, n) => v === y[n]);
}

function parseCidr(entry: string): { network: Uint8Array; bits: number } | undefined {
  const slash = entry.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp(entry.slice(0, slash));
  const bitsText = entry.slice(slash + 1);
  if (!ip || !/^\d+$/.test(bitsText)) return undefined;
  const bits = Number(bitsText);
  // Go keeps an IPv4 network in 4 bytes even when written IPv4-mapped.
  const network = canonical(ip);
  if (bits > (ip.length === 16 && network.length === 4 ? 128 : network.length * 8)) return undefined;
  return { network, bits: ip.length === 16 && network.length === 4 ? Math.max(0, bits - 96) : bits };
}

function inNetwork(ip: Uint8Array, network: Uint8Array, bits: number): boolean {
  const c = canonical(ip);
  if (c.length !== network.length) return false;
  for (let n = 0; n < bits; n++) {
    const mask = 0x80 >> (n % 8);
    if (((c[n >> 3] ?? 0) & mask) !== ((network[n >> 3] ?? 0) & mask)) return false;
  }
  return true;
}
