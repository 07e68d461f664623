// A running VMI for the removal's property tests: its own volumes (often the template's,
// sometimes others), and a volume status consistent with them, as KubeVirt writes it: an
// entry's claim is that of the VMI's volume of that name; an entry for no volume of the spec
// is a hot-plug known only there, naming one of `orphanClaims` (or none).
import fc from 'fast-check';
import type { VirtualMachineInstance, VMIVolumeStatus, Volume } from '../types.js';

export interface VmiArbitraryOptions {
  name: string;
  namespace: string;
  /** The volume names a status entry may carry. */
  volumeNames: readonly string[];
  orphanClaims: fc.Arbitrary<string | undefined>;
  /** The template's volumes, and other volumes the VMI may have instead. */
  template: Volume[];
  otherVolumes: fc.Arbitrary<Volume[]>;
}

export function runningVmiArb(o: VmiArbitraryOptions): fc.Arbitrary<VirtualMachineInstance | undefined> {
  const statusEntry = (volumes: Volume[]): fc.Arbitrary<VMIVolumeStatus> =>
    fc
      .record({ name: fc.constantFrom(...o.volumeNames), hot: fc.boolean(), orphan: o.orphanClaims })
      .map(({ name, hot, orphan }) => {
        const volume = volumes.find((v) => v.name === name);
        const claimName = volume
          ? (volume.persistentVolumeClaim?.claimName ?? volume.dataVolume?.name)
          : orphan;
        return {
          name,
          ...(claimName ? { persistentVolumeClaimInfo: { claimName } } : {}),
          ...(hot ? { hotplugVolume: { attachPodName: `hp-${name}` } } : {}),
        };
      });
  const withStatus = (volumes: Volume[]): fc.Arbitrary<VirtualMachineInstance> =>
    fc.uniqueArray(statusEntry(volumes), { maxLength: 4, selector: (s) => s.name }).map((volumeStatus) => ({
      metadata: { name: o.name, namespace: o.namespace },
      spec: { domain: { devices: {} }, volumes },
      status: { phase: 'Running' as const, volumeStatus },
    }));
  return fc.option(
    fc.oneof(
      { weight: 3, arbitrary: withStatus(o.template) },
      { weight: 1, arbitrary: o.otherVolumes.chain(withStatus) },
    ),
    { nil: undefined },
  );
}
