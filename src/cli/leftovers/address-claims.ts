// The address-claim half of `leftovers`: the claims on --harvester-ip-pool-info addresses
// (one ConfigMap per address, owned by the machine's VM) whose address no VM has. There
// should be none: the garbage collector deletes a claim with its VM, and Remove deletes the
// machine's claims after its VM; one is left when the garbage collector could not run or a
// create stopped before its VM existed, and anyone who may create ConfigMaps in the VM
// namespace can plant one naming a live VM's machine, which holds its address for as long as
// that VM lives. Deleted one by one, each as it was listed.
import {
  LABEL_ADDRESS_CLAIM,
  leftoverClaims,
  readClaim,
  type LeftoverClaim,
} from '../../harvester/fixed-addresses/address-claims.js';
import type { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { isConflict, isForbidden } from '../../kube/errors.js';
import { redact } from '../../log/redact.js';
import { keyText } from '../../api/object-key.js';

export interface ClaimScan {
  claims: LeftoverClaim[] | undefined;
  notListed?: string;
}

export async function scanAddressClaims(
  harvester: HarvesterApi,
  namespace: string | undefined,
  vms: ReadonlyArray<{
    metadata: { namespace?: string; name?: string; uid?: string; annotations?: Record<string, string> };
  }>,
  minAgeMs: number,
): Promise<ClaimScan> {
  try {
    const list = await harvester.listConfigMaps(namespace, LABEL_ADDRESS_CLAIM);
    const claims = list.flatMap((cm) => {
      const claim = readClaim(cm);
      return claim && !cm.metadata.deletionTimestamp ? [claim] : [];
    });
    return { claims: leftoverClaims(claims, vms, Date.now(), minAgeMs) };
  } catch (err) {
    if (isForbidden(err))
      return { claims: undefined, notListed: `the credential may not list ConfigMaps: ${err.message}` };
    throw err;
  }
}

export function renderClaimReport(scan: ClaimScan): string[] {
  if (!scan.claims) return [`Address claims not checked: ${scan.notListed ?? 'not listed'}`];
  if (scan.claims.length === 0) return ['No leftover address claims (every fixed address belongs to a VM)'];
  return [
    `Address claims no VM's address matches (${scan.claims.length}): the addresses stay taken until they are deleted`,
    ...scan.claims.map(
      (c) =>
        `  ${c.address} of ${c.network}: ConfigMap ${keyText(c.namespace, c.name)}, machine ${c.machine}: ${c.reason}`,
    ),
  ];
}

export function claimReportJson(scan: ClaimScan): Record<string, unknown> {
  return scan.claims ? { leftover: scan.claims } : { notListed: scan.notListed ?? '' };
}

export interface ClaimDeletionOutcome {
  deleted: string[];
  failed: Array<{ claim: string; error: string }>;
}

/** Deletes each claim as it was listed (uid and resourceVersion): one adopted or replaced meanwhile stays. */
export async function deleteLeftoverClaims(
  harvester: HarvesterApi,
  claims: readonly LeftoverClaim[],
): Promise<ClaimDeletionOutcome> {
  const outcome: ClaimDeletionOutcome = { deleted: [], failed: [] };
  for (const c of claims) {
    const id = keyText(c.namespace, c.name);
    try {
      await harvester.deleteListedConfigMap(c);
      outcome.deleted.push(id);
    } catch (err) {
      if (isConflict(err)) {
        outcome.failed.push({
          claim: id,
          error: 'changed since it was listed (adopted by a VM?): left alone',
        });
        continue;
      }
      outcome.failed.push({ claim: id, error: redact((err as Error).message) });
    }
  }
  return outcome;
}
