// Harvester's conditions are set with rancher/norman's condition helpers: a condition is
// created on first use, and its lastUpdateTime moves only when its status or message
// actually changes (a reason alone does not touch it). lastTransitionTime is never set.
import { nowIso } from '../runtime.js';
import type { HarvesterCondition } from '../types.js';

export interface ConditionChange {
  status?: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  /** An explicit lastUpdateTime (norman's Cond.LastUpdated). */
  lastUpdateTime?: string;
}

/** Returns a new list with `type` changed as norman would change it. */
export function setCondition(
  conditions: HarvesterCondition[] | undefined,
  type: string,
  change: ConditionChange,
): HarvesterCondition[] {
  const list = (conditions ?? []).map((c) => ({ ...c }));
  let cond = list.find((c) => c.type === type);
  if (!cond) {
    cond = { type, status: 'Unknown' };
    list.push(cond);
  }
  if (change.status !== undefined && cond.status !== change.status) {
    cond.status = change.status;
    cond.lastUpdateTime = nowIso();
  }
  if (change.reason !== undefined) setOptional(cond, 'reason', change.reason);
  if (change.message !== undefined && (cond.message ?? '') !== change.message) {
    setOptional(cond, 'message', change.message);
    cond.lastUpdateTime = nowIso();
  }
  if (change.lastUpdateTime !== undefined) cond.lastUpdateTime = change.lastUpdateTime;
  return list;
}

// Go serializes empty strings of omitempty fields as absent.
function setOptional(cond: HarvesterCondition, field: 'reason' | 'message', value: string): void {
  if (value === '') delete cond[field];
  else cond[field] = value;
}

export function conditionIs(
  conditions: HarvesterCondition[] | undefined,
  type: string,
  status: string,
): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === status);
}
