// What the net/rpc server serves: services by name, each a table of methods with the
// Go types of their argument and reply.
import type { GoType, GoValue } from './gob/go-types.js';
import { redact } from '../log/redact.js';

export interface RpcMethod {
  readonly argType: GoType;
  readonly replyType: GoType;
  /** Resolves to the reply; a throw or rejection becomes Response.Error. */
  call(arg: unknown): unknown;
  /** Runs once the successful reply has been handed to the OS (Close exits there). */
  readonly afterReply?: () => void;
}

/** Method name ("GetVersion") to method. */
export type RpcService = ReadonlyMap<string, RpcMethod>;

/** Service name ("RPCServerDriver") to service. */
export type RpcServices = ReadonlyMap<string, RpcService>;

export function rpcMethod<A extends GoType, R extends GoType>(
  argType: A,
  replyType: R,
  call: (arg: GoValue<A>) => GoValue<R> | Promise<GoValue<R>>,
  afterReply?: () => void,
): RpcMethod {
  return { argType, replyType, call: (arg) => call(arg as GoValue<A>), afterReply };
}

export type Route = { readonly method: RpcMethod } | { readonly error: string };

/** net/rpc's lookup of "Service.Method", with its error strings. */
export function route(services: RpcServices, serviceMethod: string): Route {
  const dot = serviceMethod.lastIndexOf('.');
  if (dot < 0) return { error: `rpc: service/method request ill-formed: ${serviceMethod}` };
  const service = services.get(serviceMethod.slice(0, dot));
  if (service === undefined) return { error: `rpc: can't find service ${serviceMethod}` };
  const method = service.get(serviceMethod.slice(dot + 1));
  if (method === undefined) return { error: `rpc: can't find method ${serviceMethod}` };
  return { method };
}

/**
 * The text sent as Response.Error: never empty (Go's client takes an empty Error for
 * success) and redacted, since it ends up in rancher-machine's output and Rancher's UI.
 */
export function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) text = error.message || `${error.name} with an empty message`;
  else if (typeof error === 'string') text = error || 'error with an empty message';
  else text = `non-error value thrown: ${describeThrown(error)}`;
  return redact(text);
}

export function describeThrown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value) ?? Object.prototype.toString.call(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
