// Harvester's "vm-keypair-controller" (pkg/controller/master/keypair): a key that parses
// gets its legacy MD5 fingerprint and condition validated=True; one that does not gets
// validated=False with the parse error as the condition's *reason* (as Harvester writes
// it). A key that already has a fingerprint is never looked at again.
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';

import type { KeyPair } from '../types.js';
import { refOf, updateWithRetry } from '../writes.js';
import { setCondition } from './conditions.js';
import { parseAuthorizedKey } from './ssh-key.js';

export const KEYPAIR_VALIDATED = 'validated';

export function keyPairController(ctx: StandInContext): Controller {
  const keyPairs = ctx.manager.cache<KeyPair>({ type: Resources.keyPair });
  return ctx.manager
    .controller('harvester-keypair', {
      reconcile: async (key) => {
        const cached = keyPairs.get(key);
        if (!cached || cached.metadata.deletionTimestamp) return;
        await updateWithRetry(ctx.client, Resources.keyPair, cached, refOf(cached), (kp) => {
          if (!kp.spec.publicKey || kp.status?.fingerPrint) return undefined;
          const parsed = parseAuthorizedKey(kp.spec.publicKey);
          const status = { ...kp.status };
          if (parsed.ok) {
            status.fingerPrint = parsed.fingerprint;
            status.conditions = setCondition(status.conditions, KEYPAIR_VALIDATED, { status: 'True' });
          } else {
            status.conditions = setCondition(status.conditions, KEYPAIR_VALIDATED, {
              status: 'False',
              reason: `failed to parse the public key, error: ${parsed.error}`,
            });
          }
          if (JSON.stringify(status) === JSON.stringify(kp.status ?? {})) return undefined;
          kp.status = status;
          return kp;
        });
      },
      logger: ctx.logger.child({ controller: 'harvester-keypair' }),
    })
    .watch(keyPairs);
}
