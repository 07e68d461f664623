// The checks of --harvester-ip-pool-info before anything is created: the pool itself, and
// the network data it would give the machine merged with --harvester-network-data, rendered
// with a stand-in address and MAC (which address and MAC the machine gets changes nothing
// of what can conflict).
import {
  fixedNetworkData,
  type FixedNetworkRequest,
} from '../../harvester/fixed-addresses/fixed-network-data.js';
import {
  describesAddresses,
  ipPoolInfoProblems,
  poolAddresses,
  poolInterface,
  poolPrefix,
  type IpPoolInfo,
} from '../../harvester/fixed-addresses/ip-pool.js';
import { networkDataProblems } from '../../harvester/cloud-init/network-data.js';
import { FLAGS } from '../config/flags.js';
import type { DriverConfig } from '../config/driver-config.js';
import type { Problems } from '../config/problems.js';

/** The MAC --harvester-network-info pins on interface i, or "". */
export function userMac(cfg: DriverConfig, index: number): string {
  return cfg.NetworkInfo?.interfaces[index]?.macAddress ?? '';
}

export function interfaceCount(cfg: DriverConfig): number {
  return cfg.NetworkInfo ? cfg.NetworkInfo.interfaces.length : 1;
}

/** What the pool's NIC is told: its address (or DHCP from Harvester's IP pool) and the rest. */
export function fixedNetworkRequest(
  cfg: DriverConfig,
  info: IpPoolInfo,
  address: string | undefined,
  macs: { nic: string; first?: string },
): FixedNetworkRequest {
  const nic = poolInterface(info, cfg) ?? 'nic-0';
  const index = Number(nic.slice('nic-'.length));
  return {
    nic: { index, mac: macs.nic },
    config:
      address === undefined
        ? { kind: 'dhcp' }
        : { kind: 'static', address, prefix: poolPrefix(info) ?? 32, gateway: info.gateway, dns: info.dns },
    ...(cfg.NetworkData.trim() === '' && index !== 0 && macs.first ? { firstNicMac: macs.first } : {}),
    interfaceCount: interfaceCount(cfg),
  };
}

export function fixedNetworkProblems(cfg: DriverConfig, problems: Problems): void {
  const info = cfg.HarvesterMachine.IPPoolInfo;
  if (!info) return;
  const own = ipPoolInfoProblems(info, cfg);
  problems.addAll(FLAGS.ipPoolInfo, own);
  if (own.length > 0 || networkDataProblems(cfg.NetworkData).length > 0) return;
  const placeholder = '02:00:00:00:00:01';
  const nicIndex = Number((poolInterface(info, cfg) ?? 'nic-0').slice('nic-'.length));
  const request = fixedNetworkRequest(
    cfg,
    info,
    describesAddresses(info) ? poolAddresses(info)[0] : undefined,
    {
      nic: userMac(cfg, nicIndex) || placeholder,
      first: userMac(cfg, 0) || '02:00:00:00:00:02',
    },
  );
  const rendered = fixedNetworkData(cfg.NetworkData, request);
  if (!('text' in rendered)) {
    problems.addAll(FLAGS.networkData, rendered.problems);
    return;
  }
  for (const p of networkDataProblems(rendered.text))
    problems.add(
      FLAGS.ipPoolInfo,
      `the network data it gives the machine${cfg.NetworkData ? ' (with --harvester-network-data)' : ''} ${p}`,
    );
}
