// The one classification of Kubernetes API failures. Every caller branches on
// `kind`, never on status codes or message text.
import { redact } from '../log/redact.js';

export type KubeErrorKind =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'Forbidden'
  /** 401, or 403 for system:anonymous / system:unauthenticated: the credential itself was refused. */
  | 'CredentialRejected'
  | 'TooManyRequests'
  | 'ServerError'
  /** The server could not be reached or the connection broke. */
  | 'Unreachable'
  /** A request or a wait ran past its deadline. */
  | 'Timeout'
  /** A watch resourceVersion too old (410). */
  | 'Gone'
  | 'MethodNotAllowed'
  | 'Unknown';

/** What a credential is, without its secret: for error messages a person can act on. */
export interface CredentialDescription {
  server: string;
  /** Token name (Rancher `kubeconfig-u-abc12`, bootstrap token id, service account) or client-cert subject. */
  identity?: string;
  expiresAt?: Date;
}

/** The `Status` object an apiserver returns with a failure. */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; retryAfterSeconds?: number };
}

export class KubeError extends Error {
  override readonly name = 'KubeError';
  constructor(
    readonly kind: KubeErrorKind,
    /** What we were doing: "get virtualmachines.kubevirt.io default/vm1". */
    readonly operation: string,
    message: string,
    readonly extra: {
      statusCode?: number;
      reason?: string;
      retryAfterMs?: number;
      credential?: CredentialDescription;
      /** The proxy in the way (scheme, host and port only), when the client uses one. */
      proxy?: string;
      /** A proxy's answer to CONNECT that was not 200. */
      proxyStatusCode?: number;
      /** An admission webhook refused the request (admissionDenial). */
      denial?: AdmissionDenial;
      /** The answer (or one watch event) was larger than the client's cap. */
      tooLarge?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(redact(message), extra.cause === undefined ? undefined : { cause: extra.cause });
  }

  get statusCode(): number | undefined {
    return this.extra.statusCode;
  }
}

/** An answer or watch event larger than the client's cap (TransportOptions.maxResponseBytes). */
export function isTooLarge(err: unknown): boolean {
  return err instanceof KubeError && err.extra.tooLarge === true;
}

/** A KubeError (of one of `kinds`, when any are named). */
export function isKubeError(err: unknown, ...kinds: KubeErrorKind[]): err is KubeError {
  return err instanceof KubeError && (kinds.length === 0 || kinds.includes(err.kind));
}

// The checks call sites make, named as apimachinery's errors package names them.
export const isNotFound = (err: unknown): err is KubeError => isKubeError(err, 'NotFound');
export const isConflict = (err: unknown): err is KubeError => isKubeError(err, 'Conflict');
export const isAlreadyExists = (err: unknown): err is KubeError => isKubeError(err, 'AlreadyExists');
export const isForbidden = (err: unknown): err is KubeError => isKubeError(err, 'Forbidden');
export const isCredentialRejected = (err: unknown): err is KubeError =>
  isKubeError(err, 'CredentialRejected');

/**
 * For a `.catch()` or a catch block: an object that is not there is no failure (as
 * controller-runtime's client.IgnoreNotFound); anything else is thrown on.
 */
export function ignoreNotFound(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}

/** A create that met the object already there is no failure; anything else is thrown on. */
export function ignoreAlreadyExists(err: unknown): undefined {
  if (isAlreadyExists(err)) return undefined;
  throw err;
}

const ANONYMOUS = /User "system:(anonymous|unauthenticated)"/;

/** Which admission webhook refused a request, and what it said (the apiserver's wording). */
export interface AdmissionDenial {
  webhook: string;
  message: string;
}

/**
 * kube-apiserver words a validating or mutating webhook's refusal as
 * `admission webhook "<name>" denied the request: <the webhook's message, or its reason>` (or
 * `… denied the request without explanation`), with the status the webhook gave
 * (docs/upstream/control-plane.md#admission-webhooks-and-dry-runs).
 */
const DENIED = /^admission webhook "([^"]{1,253})" denied the request(?:: ([\s\S]*)| without explanation)?$/;

/** The webhook's refusal in a failure Status; undefined when no webhook refused. */
export function admissionDenialOf(status: KubeStatus | undefined): AdmissionDenial | undefined {
  const match = DENIED.exec(status?.message ?? '');
  if (!match) return undefined;
  return { webhook: match[1] ?? '', message: redact(match[2] ?? '') };
}

/** The admission webhook's refusal behind `err`; undefined when it is no such refusal. */
export function admissionDenial(err: unknown): AdmissionDenial | undefined {
  return err instanceof KubeError ? err.extra.denial : undefined;
}

/** Classifies an HTTP answer from an apiserver (or a proxy in front of one). */
export function classifyStatus(statusCode: number, status: KubeStatus | undefined): KubeErrorKind {
  const message = status?.message ?? '';
  switch (statusCode) {
    case 401:
      return 'CredentialRejected';
    case 403:
      return ANONYMOUS.test(message) ? 'CredentialRejected' : 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 409:
      return status?.reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict';
    case 410:
      return 'Gone';
    case 422:
      return 'Invalid';
    case 400:
      return 'BadRequest';
    case 429:
      return 'TooManyRequests';
    case 504:
      return 'Timeout';
    default:
      return statusCode >= 500 ? 'ServerError' : 'Unknown';
  }
}

/** Parses a response body as a Status when it is one; otherwise keeps a short text. */
export function parseStatusBody(body: string): KubeStatus | undefined {
  try {
    const parsed = JSON.parse(body) as unknown;
    if (parsed && typeof parsed === 'object') return fromNormanError(parsed) ?? parsed;
  } catch {
    // not JSON: a proxy or a load balancer answered
  }
  const text = body.trim().slice(0, 300);
  return text ? { message: text } : undefined;
}

/**
 * Rancher's own handlers (its /k8s/clusters/<id> proxy among them) answer with a norman API
 * error, not a Status: {"Code":{"Code":"Forbidden","Status":403},"Message":"...",...}.
 */
function fromNormanError(parsed: object): KubeStatus | undefined {
  const { Code: code, Message: message } = parsed as {
    Code?: { Code?: unknown; Status?: unknown };
    Message?: unknown;
  };
  if (typeof message !== 'string' || !code || typeof code !== 'object') return undefined;
  return {
    message,
    ...(typeof code.Code === 'string' ? { reason: code.Code } : {}),
    ...(typeof code.Status === 'number' ? { code: code.Status } : {}),
  };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

export function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NETWORK_CODES.has(code);
}

/** Errors worth another try after a pause: the request may well succeed next time. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof KubeError)) return false;
  return (
    err.kind === 'TooManyRequests' ||
    err.kind === 'ServerError' ||
    err.kind === 'Unreachable' ||
    (err.kind === 'Timeout' && err.statusCode === 504)
  );
}
