// The `<machine>-machine-state` Secret where Rancher keeps rancher-machine's store between
// jobs (docs/upstream/rancher.md#machine-state-secret): key `extractedConfig` holds a gzip'd
// tar of the store's machines directory, full paths such as
// home/machine/.docker/machine/machines/<name>/config.json.
// The sandbox writes the same layout (config.json only; no SSH keys) and reads it back for
// the removal job. A minimal ustar writer/reader: regular files only.
import { gunzipSync, gzipSync } from 'node:zlib';
import { keyText } from '../../src/api/object-key.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';

export const MACHINE_STATE_KEY = 'extractedConfig';
export const MACHINE_STATE_TYPE = 'rke.cattle.io/machine-state';
const STORE = 'home/machine/.docker/machine/machines';

export const machineStateSecretName = (machineName: string): string => `${machineName}-machine-state`;

function header(path: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  let name = path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = path.lastIndexOf('/', 155);
    prefix = path.slice(0, cut);
    name = path.slice(cut + 1);
  }
  const put = (text: string, offset: number, length: number): void =>
    void h.write(text, offset, length, 'utf8');
  const octal = (n: number, length: number): string => n.toString(8).padStart(length - 1, '0') + '\0';
  put(name, 0, 100);
  put(octal(0o600, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(0, 12), 136, 12);
  put('        ', 148, 8);
  put('0', 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  put(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

export function writeTar(files: Record<string, Buffer>): Buffer {
  const parts: Buffer[] = [];
  for (const [path, content] of Object.entries(files)) {
    parts.push(header(path, content.length), content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

export function readTar(tar: Buffer): Record<string, Buffer> {
  const files: Record<string, Buffer> = {};
  let offset = 0;
  const text = (start: number, length: number): string =>
    tar
      .subarray(start, start + length)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  while (offset + 512 <= tar.length) {
    const name = text(offset, 100);
    if (!name) break;
    const prefix = text(offset + 345, 155);
    const size = parseInt(text(offset + 124, 12).trim() || '0', 8);
    const type = text(offset + 156, 1);
    if (type === '0' || type === '')
      files[prefix ? `${prefix}/${name}` : name] = tar.subarray(offset + 512, offset + 512 + size);
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** The libmachine Host document (config.json) Rancher saves: the driver's config under "Driver". */
export function hostDocument(name: string, driver: unknown): Record<string, unknown> {
  return { ConfigVersion: 3, Driver: driver, DriverName: 'harvester', HostOptions: {}, Name: name };
}

/**
 * The Secret with `driverConfig` saved as config.json; without one, empty, as Rancher creates
 * it before the create job (rancher-machine only updates it).
 */
export function machineStateSecret(opts: {
  namespace: string;
  machineName: string;
  instanceName: string;
  driverConfig?: unknown;
  owner?: KubeObject;
}): KubeObject {
  const path = `${STORE}/${opts.instanceName}/config.json`;
  const data =
    opts.driverConfig === undefined
      ? undefined
      : {
          [MACHINE_STATE_KEY]: gzipSync(
            writeTar({
              [path]: Buffer.from(JSON.stringify(hostDocument(opts.instanceName, opts.driverConfig))),
            }),
          ).toString('base64'),
        };
  const owner = opts.owner;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: machineStateSecretName(opts.machineName),
      namespace: opts.namespace,
      ...(owner?.metadata.uid
        ? {
            ownerReferences: [
              {
                apiVersion: owner.apiVersion ?? '',
                kind: owner.kind ?? '',
                name: owner.metadata.name,
                uid: owner.metadata.uid,
              },
            ],
          }
        : {}),
    },
    type: MACHINE_STATE_TYPE,
    ...(data ? { data } : {}),
  } as KubeObject;
}

/** The saved driver config (config.json's "Driver") of an instance, as rancher-machine's rm loads it. */
export async function readSavedDriverConfig(
  rancher: KubeClient,
  namespace: string,
  machineName: string,
  instanceName: string,
): Promise<unknown> {
  const secret = await rancher.get<KubeObject & { data?: Record<string, string> }>(Resources.secret, {
    namespace,
    name: machineStateSecretName(machineName),
  });
  const b64 = secret.data?.[MACHINE_STATE_KEY];
  if (!b64)
    throw new Error(
      `Secret ${keyText(namespace, machineStateSecretName(machineName))} has no ${MACHINE_STATE_KEY}`,
    );
  const files = readTar(gunzipSync(Buffer.from(b64, 'base64')));
  const entry = Object.entries(files).find(([p]) => p.endsWith(`/machines/${instanceName}/config.json`));
  if (!entry)
    throw new Error(
      `no machines/${instanceName}/config.json in ${keyText(namespace, machineStateSecretName(machineName))}`,
    );
  const host = JSON.parse(entry[1].toString('utf8')) as { Driver?: unknown };
  return host.Driver;
}
