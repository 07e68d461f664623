// The headers of Go's net/rpc gob codec: every call is a Request then the argument,
// every answer a Response then the reply (struct{}{} when Error is set).
import { goEmptyStruct, goString, goStruct, goUint64 } from './gob/go-types.js';
import type { GoValue } from './gob/go-types.js';

export const rpcRequestType = goStruct('Request', { ServiceMethod: goString, Seq: goUint64 });
export const rpcResponseType = goStruct('Response', {
  ServiceMethod: goString,
  Seq: goUint64,
  Error: goString,
});

export type RpcRequestHeader = GoValue<typeof rpcRequestType>;
export type RpcResponseHeader = GoValue<typeof rpcResponseType>;

/** Go's struct{}: the argument of every call that takes none, and the reply body of errors. */
export const emptyStructType = goEmptyStruct;
export const EMPTY_STRUCT: GoValue<typeof goEmptyStruct> = {};
