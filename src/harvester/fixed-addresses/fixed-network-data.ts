// The cloud-init network data of a machine with a fixed address: the operator's
// --harvester-network-data (if any) with one more interface entry, the pool's, which names
// its NIC by the MAC the driver pins, so the guest's own interface names do not matter.
// cloud-init's v1 and v2 formats both work: the entry is added in the format the operator
// wrote (v1 when there is none, as Harvester's network-data templates are). Where the
// operator's data already configures that NIC, or sets a default gateway when the pool sets
// one too, the two cannot both hold: that is refused, naming both flags.
import { Document, isMap, isSeq, parseDocument, type YAMLMap } from 'yaml';
import { yamlProblem } from '../../common/parse-problems.js';

/** What the pool's NIC gets: a static address, or DHCP (a Harvester IP pool serves it). */
export type FixedNicConfig =
  { kind: 'static'; address: string; prefix: number; gateway: string; dns: string[] } | { kind: 'dhcp' };

export interface FixedNetworkRequest {
  /** The pool's NIC: its index among the VM's interfaces and its pinned MAC. */
  nic: { index: number; mac: string };
  config: FixedNicConfig;
  /**
   * nic-0's MAC when the pool's NIC is another one and the operator gave no network data:
   * nic-0 keeps DHCP, which is what cloud-init does for the first NIC without network data.
   */
  firstNicMac?: string;
  /** How many interfaces the VM has. */
  interfaceCount: number;
}

/** The guest name the entry gives the NIC (v1 entries need one; cloud-init renames the NIC by its MAC). */
export const guestInterfaceName = (index: number): string => `eth${index}`;

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => v !== null && typeof v === 'object' && !Array.isArray(v);
const lower = (v: unknown): string => (typeof v === 'string' ? v.toLowerCase() : '');

function v1Entry(name: string, mac: string, config: FixedNicConfig): Plain {
  const subnet: Plain =
    config.kind === 'dhcp'
      ? { type: 'dhcp' }
      : {
          type: 'static',
          address: `${config.address}/${config.prefix}`,
          ...(config.gateway ? { gateway: config.gateway } : {}),
          ...(config.dns.length > 0 ? { dns_nameservers: [...config.dns] } : {}),
        };
  return { type: 'physical', name, mac_address: mac, subnets: [subnet] };
}

function v2Entry(name: string, mac: string, config: FixedNicConfig): Plain {
  const entry: Plain = { match: { macaddress: mac }, 'set-name': name };
  if (config.kind === 'dhcp') return { ...entry, dhcp4: true };
  return {
    ...entry,
    addresses: [`${config.address}/${config.prefix}`],
    ...(config.gateway ? { gateway4: config.gateway } : {}),
    ...(config.dns.length > 0 ? { nameservers: { addresses: [...config.dns] } } : {}),
  };
}

/** What the operator's entries configure, for the conflict checks. */
interface Configured {
  macs: string[];
  names: string[];
  /** Entries that configure a NIC of the guest (physical in v1, ethernets in v2). */
  nics: number;
  gateways: number;
}

function configuredV1(config: unknown[]): Configured {
  const out: Configured = { macs: [], names: [], nics: 0, gateways: 0 };
  for (const entry of config) {
    if (!isPlain(entry)) continue;
    if (entry['type'] === 'physical') out.nics += 1;
    if (entry['mac_address'] !== undefined) out.macs.push(lower(entry['mac_address']));
    if (typeof entry['name'] === 'string') out.names.push(entry['name']);
    const subnets = Array.isArray(entry['subnets']) ? entry['subnets'] : [];
    for (const s of subnets)
      if (isPlain(s) && typeof s['gateway'] === 'string' && s['gateway'] !== '') out.gateways += 1;
  }
  return out;
}

function configuredV2(root: Plain): Configured {
  const out: Configured = { macs: [], names: [], nics: 0, gateways: 0 };
  const ethernets = isPlain(root['ethernets']) ? root['ethernets'] : {};
  for (const [id, entry] of Object.entries(ethernets)) {
    out.nics += 1;
    out.names.push(id);
    if (!isPlain(entry)) continue;
    if (typeof entry['set-name'] === 'string') out.names.push(entry['set-name']);
    if (isPlain(entry['match']) && entry['match']['macaddress'] !== undefined)
      out.macs.push(lower(entry['match']['macaddress']));
    if (typeof entry['gateway4'] === 'string') out.gateways += 1;
    const routes = Array.isArray(entry['routes']) ? entry['routes'] : [];
    for (const r of routes)
      if (isPlain(r) && (r['to'] === 'default' || r['to'] === '0.0.0.0/0')) out.gateways += 1;
  }
  return out;
}

function conflicts(found: Configured, req: FixedNetworkRequest): string[] {
  const name = guestInterfaceName(req.nic.index);
  const problems: string[] = [];
  if (found.macs.includes(req.nic.mac.toLowerCase()))
    problems.push(
      `configures the interface with MAC ${req.nic.mac}, which --harvester-ip-pool-info configures`,
    );
  if (found.names.includes(name))
    problems.push(
      `configures an interface named ${name}, the name --harvester-ip-pool-info gives its interface (nic-${req.nic.index})`,
    );
  if (req.interfaceCount === 1 && found.nics > 0 && problems.length === 0)
    problems.push(
      "configures the machine's only interface, which --harvester-ip-pool-info configures; leave its entry out (keep the rest, e.g. nameservers)",
    );
  if (req.config.kind === 'static' && req.config.gateway !== '' && found.gateways > 0)
    problems.push(
      `sets a default gateway and --harvester-ip-pool-info sets ${req.config.gateway}: a VM takes one default route; give the gateway in one of them only`,
    );
  return problems;
}

/**
 * The network data for the machine: the operator's text with the pool's entry added (as
 * YAML nodes, so the rest keeps the form it was written in), or the conflicts that forbid it
 * (phrases after `--harvester-network-data`). The operator's text is assumed to have passed
 * networkDataProblems.
 */
export function fixedNetworkData(
  userText: string,
  req: FixedNetworkRequest,
): { text: string; problems: [] } | { problems: string[] } {
  const name = guestInterfaceName(req.nic.index);
  if (userText.trim() === '') {
    const config = [v1Entry(name, req.nic.mac, req.config)];
    if (req.firstNicMac && req.nic.index !== 0)
      config.unshift(v1Entry(guestInterfaceName(0), req.firstNicMac, { kind: 'dhcp' }));
    return { text: new Document({ version: 1, config }).toString({ lineWidth: 0 }), problems: [] };
  }
  const doc = parseDocument(userText, { version: '1.1' });
  const first = doc.errors[0];
  if (first) return { problems: [yamlProblem(first)] };
  const data: unknown = doc.toJS();
  if (!isPlain(data))
    return { problems: ['must be a YAML mapping (cloud-init network config version 1 or 2)'] };
  const wrapped = isPlain(data['network']);
  const root = wrapped ? (data['network'] as Plain) : data;
  const at = (...path: string[]): string[] => (wrapped ? ['network', ...path] : path);
  if (root['version'] === 1) {
    const config = Array.isArray(root['config']) ? root['config'] : [];
    const problems = conflicts(configuredV1(config), req);
    if (problems.length > 0) return { problems };
    if (!isSeq(doc.getIn(at('config')))) doc.setIn(at('config'), doc.createNode([]));
    doc.addIn(at('config'), doc.createNode(v1Entry(name, req.nic.mac, req.config)));
  } else if (root['version'] === 2) {
    const problems = conflicts(configuredV2(root), req);
    if (problems.length > 0) return { problems };
    if (!isMap(doc.getIn(at('ethernets')))) doc.setIn(at('ethernets'), doc.createNode({}));
    (doc.getIn(at('ethernets')) as YAMLMap).set(name, doc.createNode(v2Entry(name, req.nic.mac, req.config)));
  } else {
    return { problems: ['has a "version" other than 1 or 2'] };
  }
  return { text: doc.toString({ lineWidth: 0 }), problems: [] };
}
