// A kubeconfig fixture for the tests of every layer that reads kubeconfigs: Rancher-style,
// with a fake token. Nothing here is a real credential.

export const FAKE_TOKEN_SECRET = 'q8w7e6r5t4y3u2i1o0p9a8s7d6f5g4h3j2k1l0z9x8c7v6b5n4m3';
export const FAKE_TOKEN = `kubeconfig-u-abc12:${FAKE_TOKEN_SECRET}`;

/** A kubeconfig as Rancher's generateKubeconfig makes it for a Harvester cluster. */
export function rancherKubeconfig(
  overrides: { server?: string; currentContext?: string; token?: string } = {},
): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: harvester',
    '  cluster:',
    `    server: "${overrides.server ?? 'https://rancher.example.test/k8s/clusters/c-m-abcd1234'}"`,
    'contexts:',
    '- name: harvester',
    '  context:',
    '    cluster: harvester',
    '    user: harvester',
    `current-context: "${overrides.currentContext ?? 'harvester'}"`,
    'users:',
    '- name: harvester',
    '  user:',
    `    token: "${overrides.token ?? FAKE_TOKEN}"`,
    '',
  ].join('\n');
}
