// The driver, the CLI and the controller reach Harvester only through src/harvester-access
// (its typed operations, docs/decisions/0026-one-way-to-harvester.md). This rule refuses, in
// those fronts, naming a Harvester or KubeVirt resource type (`Resources.virtualMachine`,
// `Resources.pvc`, `VmDhcpResources`, ...): a front that names one is about to call Harvester
// with it, on a client of its own or through a generic pass-through. Rancher's and Cluster
// API's types, and the generic ones (Secret, ConfigMap, reviews), stay usable: the fronts
// talk to Rancher's apiserver themselves.

/** The members of src/kube/resources.ts's Resources that are Harvester's or KubeVirt's. */
export const HARVESTER_TYPES = new Set([
  'virtualMachine',
  'virtualMachineInstance',
  'pvc',
  'setting',
  'virtualMachineImage',
  'keyPair',
  'loadBalancer',
  'ipPool',
  'networkAttachmentDefinition',
  'pciDevice',
  'pciDeviceClaim',
  'usbDevice',
  'usbDeviceClaim',
]);

/** Resource-type tables of Harvester add-ons, defined in src/harvester-access. */
const HARVESTER_TABLES = new Set(['VmDhcpResources']);

const MESSAGE = (what) =>
  `${what} is a Harvester/KubeVirt resource type: reach Harvester through a typed operation of src/harvester-access (add one there)`;

export const harvesterAccessPlugin = {
  rules: {
    'only-through-access': {
      meta: {
        type: 'problem',
        docs: {
          description:
            'The fronts reach Harvester only through src/harvester-access (eslint/harvester-access.js)',
        },
        schema: [],
      },
      create(context) {
        return {
          MemberExpression(node) {
            if (
              node.object.type === 'Identifier' &&
              node.object.name === 'Resources' &&
              !node.computed &&
              node.property.type === 'Identifier' &&
              HARVESTER_TYPES.has(node.property.name)
            )
              context.report({ node, message: MESSAGE(`Resources.${node.property.name}`) });
          },
          ImportSpecifier(node) {
            if (node.imported.type === 'Identifier' && HARVESTER_TABLES.has(node.imported.name))
              context.report({ node, message: MESSAGE(node.imported.name) });
          },
        };
      },
    },
  },
};
