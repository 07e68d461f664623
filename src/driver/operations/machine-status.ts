// GetState, GetIP, GetIPv6, GetURL: read-only questions about one machine.
import {
  pickNodeAddresses,
  interfaceNameForNetwork,
  type NodeAddresses,
} from '../../harvester/fixed-addresses/ip-address.js';
import { MachineState, machineStateOf } from '../../harvester/machine-state.js';
import type { Vmi } from '../../harvester-access/harvester-api.js';
import { vmRef, type OperationContext } from './context.js';

export async function machineState(ctx: OperationContext): Promise<MachineState> {
  const { VMNamespace: ns, MachineName: name } = ctx.config;
  // Both at once; the VM's answer comes first (its error is the one reported, a VMI without its
  // VM is not looked at).
  const vmRead = ctx.api.findVm(ns, name);
  const vmiRead = ctx.api.findVmi(ns, name);
  vmiRead.catch(() => undefined); // counted only once the VM is read
  const vm = await vmRead;
  if (!vm) return MachineState.NotFound;
  return machineStateOf(vm, await vmiRead);
}

/** The interface that gives the node IP: the one of --harvester-ip-network, else any. */
export function chosenInterface(ctx: OperationContext): string | undefined {
  const network = ctx.config.HarvesterMachine.IPNetwork;
  if (!network) return undefined;
  const name = interfaceNameForNetwork(ctx.config, network);
  if (!name) {
    throw new Error(
      `--harvester-ip-network ${network} is not one of the machine's networks (${
        ctx.config.NetworkInfo?.interfaces.map((i) => i.networkName).join(', ') ||
        ctx.config.NetworkName ||
        'none'
      })`,
    );
  }
  return name;
}

/**
 * Whether the fixed address (--harvester-ip-pool-info) is the node IP: unless
 * --harvester-ip-network names another of the machine's interfaces.
 */
export function fixedIsNodeAddress(ctx: OperationContext): boolean {
  const fixed = ctx.config.HarvesterMachine.FixedAddress;
  if (!fixed) return false;
  const chosen = chosenInterface(ctx);
  return chosen === undefined || chosen === fixed.interface;
}

export function addressesOf(ctx: OperationContext, vmi: Vmi | undefined): NodeAddresses | undefined {
  return pickNodeAddresses(vmi, chosenInterface(ctx));
}

/** drivers.MustBeRunning, then the addresses of the running VMI; errors say why there are none. */
async function runningAddresses(ctx: OperationContext): Promise<NodeAddresses | undefined> {
  const { VMNamespace: ns, MachineName: name } = ctx.config;
  const state = await machineState(ctx);
  if (state !== MachineState.Running) {
    throw new Error(`Host is not running (VM ${vmRef(ctx.config)} is ${MachineState[state]})`);
  }
  return addressesOf(ctx, await ctx.api.findVmi(ns, name));
}

export async function machineIp(ctx: OperationContext): Promise<string> {
  const fixed = ctx.config.HarvesterMachine.FixedAddress;
  if (fixed && fixedIsNodeAddress(ctx)) {
    // The address the machine was given; no need to ask the guest agent.
    const state = await machineState(ctx);
    if (state !== MachineState.Running)
      throw new Error(`Host is not running (VM ${vmRef(ctx.config)} is ${MachineState[state]})`);
    return fixed.address;
  }
  const addresses = await runningAddresses(ctx);
  // An IPv6-only guest (harvester#7520) still gets an address rather than an error.
  const ip = addresses?.ipv4 ?? addresses?.ipv6;
  if (!ip) {
    throw new Error(
      `VM ${vmRef(ctx.config)} is running but reports no IP address yet` +
        (ctx.config.HarvesterMachine.IPNetwork
          ? ` on network ${ctx.config.HarvesterMachine.IPNetwork}`
          : '') +
        ': addresses come from qemu-guest-agent, so check that the image runs it',
    );
  }
  return ip;
}

export async function machineIpv6(ctx: OperationContext): Promise<string> {
  const addresses = await runningAddresses(ctx).catch(() => undefined);
  const ip = addresses?.ipv6 ?? ctx.config.IPv6Address;
  // rancher/machine's BaseDriver wording, which callers may match.
  if (!ip) throw new Error('IPv6 address is not set');
  return ip;
}

export function dockerUrl(ip: string): string {
  return `tcp://${ip.includes(':') ? `[${ip}]` : ip}:2376`;
}
