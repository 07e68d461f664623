// KubeVirt's condition managers: a condition is replaced only when its status or reason
// changes, so timestamps stay put while nothing happens.
import type { Condition } from '../types.js';

export function upsertCondition(conditions: Condition[] | undefined, cond: Condition): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === cond.type);
  if (i < 0) list.push(cond);
  else if (list[i]?.status !== cond.status || (list[i]?.reason ?? '') !== (cond.reason ?? '')) list[i] = cond;
  return list;
}

export function removeCondition(conditions: Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return (conditions ?? []).find((c) => c.type === type);
}

export function hasCondition(
  conditions: Condition[] | undefined,
  type: string,
  status: string,
  reason?: string,
): boolean {
  const c = findCondition(conditions, type);
  return c !== undefined && c.status === status && (reason === undefined || c.reason === reason);
}
