// How much a flag may hold. Rancher passes flags as arguments of rancher-machine, and Linux
// passes at most 128 KiB as one argument; the flags that can be whole documents (base64
// allowed) also come from a file or a Secret (the kubeconfig), and 2 MiB is more than any
// Kubernetes object can hold (a Secret holds at most 1 MiB, etcd takes 1.5 MiB a request).
// Beyond these a value is a mistake or an attack, refused before it is decoded or parsed.
import { FLAGS, type FlagSpec } from './flags.js';

const KiB = 1024;
const MiB = 1024 * KiB;

export interface FlagLimit {
  bytes: number;
  shown: string;
  why: string;
}

const DOCUMENT_FLAG_LIMIT: FlagLimit = {
  bytes: 2 * MiB,
  shown: '2 MiB',
  why: 'more than any Kubernetes object can hold',
};
const FLAG_LIMIT: FlagLimit = {
  bytes: 128 * KiB,
  shown: '128 KiB',
  why: 'the most Linux passes as one argument',
};
const DOCUMENT_FLAGS: ReadonlySet<FlagSpec> = new Set([
  FLAGS.kubeconfigContent,
  FLAGS.userData,
  FLAGS.networkData,
  FLAGS.vmAffinity,
]);

/** User data and network data go together into the cloud-init Secret. */
export const CLOUD_INIT_SECRET_LIMIT = MiB;

export function flagLimit(spec: FlagSpec): FlagLimit {
  return DOCUMENT_FLAGS.has(spec) ? DOCUMENT_FLAG_LIMIT : FLAG_LIMIT;
}

/** The phrase for a value over its flag's limit, or undefined when it is within it. */
export function oversizeProblem(spec: FlagSpec, value: string): string | undefined {
  const limit = flagLimit(spec);
  // Each UTF-16 unit is at least one byte: only a long value needs counting.
  if (value.length <= limit.bytes / 4) return undefined;
  const bytes = Buffer.byteLength(value);
  if (bytes <= limit.bytes) return undefined;
  return `is ${formatSize(bytes)}; at most ${limit.shown} is accepted (${limit.why})`;
}

export function formatSize(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${Math.round(bytes / KiB)} KiB`;
}
