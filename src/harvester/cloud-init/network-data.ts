// Checks of cloud-init network data (--harvester-network-data) before a VM is created.
// The Go driver checks version 1 configs for exactly one default route (a static gateway,
// or DHCP) and at least one nameserver; a VM without them never reports an IP, and the
// create then times out ten minutes later with nothing said. We check the same, and are
// more lenient where the Go check rejects configs cloud-init accepts (see comments).

import { parseDocument } from 'yaml';
import { yamlProblem } from '../../common/parse-problems.js';

type Mapping = Record<string, unknown>;

const isMapping = (v: unknown): v is Mapping => v !== null && typeof v === 'object' && !Array.isArray(v);

interface Counts {
  gateways: number;
  dhcp: number;
  nameservers: number;
}

function countSubnets(entry: Mapping, where: string, counts: Counts, problems: string[]): void {
  const subnets = entry['subnets'];
  // The Go driver requires subnets on every physical entry; cloud-init does not (bond members).
  if (subnets === undefined || subnets === null) return;
  if (!Array.isArray(subnets)) {
    problems.push(`${where}.subnets must be a list`);
    return;
  }
  subnets.forEach((subnet, j) => {
    const at = `${where}.subnets[${j}]`;
    if (!isMapping(subnet) || typeof subnet['type'] !== 'string') {
      problems.push(`${at} needs a type (dhcp, static, …)`);
      return;
    }
    const type = subnet['type'];
    // A DHCP lease usually brings a nameserver too, which is why the Go check counts it as one.
    if (type === 'dhcp' || type === 'dhcp4' || type === 'dhcp6') {
      counts.dhcp += 1;
      counts.nameservers += 1;
    } else if (type === 'static' || type === 'static6') {
      const gateway = subnet['gateway'];
      if (typeof gateway === 'string' && gateway !== '') counts.gateways += 1;
      // Not counted by the Go check, though cloud-init writes them to the resolver.
      const dns = subnet['dns_nameservers'];
      if (Array.isArray(dns)) counts.nameservers += dns.length;
    }
  });
}

function checkVersion1(root: Mapping, problems: string[]): void {
  const config = root['config'];
  if (!Array.isArray(config)) {
    problems.push('version 1 needs a "config" list');
    return;
  }
  const counts: Counts = { gateways: 0, dhcp: 0, nameservers: 0 };
  config.forEach((entry, i) => {
    const where = `config[${i}]`;
    if (!isMapping(entry) || typeof entry['type'] !== 'string') {
      problems.push(`${where} needs a type (physical, nameserver, …)`);
      return;
    }
    if (entry['type'] === 'nameserver') {
      const address = entry['address'];
      if (Array.isArray(address)) counts.nameservers += address.length;
      else if (typeof address === 'string' && address !== '') counts.nameservers += 1;
      else problems.push(`${where} is a nameserver entry without an "address" list`);
      return;
    }
    countSubnets(entry, where, counts, problems);
  });
  if (problems.length > 0) return;
  if (counts.gateways > 1) {
    problems.push(`has ${counts.gateways} default gateways; at most one static subnet may set a gateway`);
  }
  if (counts.gateways === 0 && counts.dhcp === 0) {
    problems.push(
      'configures neither DHCP nor a static subnet with a gateway, so the VM would have no route',
    );
  }
  if (counts.nameservers === 0) {
    problems.push('configures no nameserver (add a "nameserver" entry or dns_nameservers, or use DHCP)');
  }
}

/** Problems of network data, as phrases that follow the flag name; empty when it is usable. */
export function networkDataProblems(text: string): string[] {
  if (text.trim() === '') return [];
  // cloud-init reads YAML 1.1 (PyYAML), as did the Go driver's parser.
  const doc = parseDocument(text, { version: '1.1' });
  const firstError = doc.errors[0];
  if (firstError) return [yamlProblem(firstError)];
  const data: unknown = doc.toJS();
  if (!isMapping(data)) return ['must be a YAML mapping (cloud-init network config version 1 or 2)'];
  const root = data['network'] === undefined ? data : data['network'];
  if (!isMapping(root)) return ['has a "network" key that is not a mapping'];
  const version = root['version'];
  if (version === undefined || version === null) return ['has no "version" (expected 1 or 2)'];
  if (version !== 1 && version !== 2) return ['has a "version" other than 1 or 2'];
  const problems: string[] = [];
  // Version 2 (netplan) is passed through unchecked, as the Go driver does.
  if (version === 1) checkVersion1(root, problems);
  return problems;
}
