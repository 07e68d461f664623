// The layers of src/, as a lint rule: which top-level folder of src/ may import which, and
// that nothing in src/ imports sandbox/, bench/ or test/ (they may import src/, never the
// reverse). A new folder under src/ is refused until it is given a row here.
import path from 'node:path';

const PURE = ['common', 'api'];
const DOMAIN = [...PURE, 'log', 'harvester', 'rancher', 'kube'];
const ACCESS = [...DOMAIN, 'harvester-access'];
const FRONTS = [...ACCESS, 'driver'];

/** Each layer, and the layers it may import besides itself. */
export const LAYERS = {
  // Dependency-free helpers (durations, parser messages) every layer may use.
  common: [],
  // The shapes of the API objects (meta, KubeVirt, Harvester, CDI, Cluster API) and typed
  // object keys: plain types and pure helpers, the one definition everyone imports.
  api: [],
  log: PURE,
  // The pure decisions about Harvester, KubeVirt and the Go driver's config.
  harvester: PURE,
  // Rancher's and Cluster API's side of the contract: names, credential decoding.
  rancher: PURE,
  // The only code that talks to Kubernetes.
  kube: [...PURE, 'log'],
  // The one way to Harvester: typed reads and writes of its objects, built on kube/, and the
  // clients per credential; the driver, the CLI and the controller all reach Harvester here.
  'harvester-access': DOMAIN,
  driver: ACCESS,
  // The three fronts never import each other.
  plugin: FRONTS,
  cli: FRONTS,
  controller: FRONTS,
  // The one entry point that routes argv to the CLI, the controller or the plugin.
  bin: [...FRONTS, 'plugin', 'cli', 'controller'],
};

function sourceOf(node) {
  const source = node.source;
  return source && source.type === 'Literal' && typeof source.value === 'string' ? source : undefined;
}

export const layersPlugin = {
  rules: {
    imports: {
      meta: {
        type: 'problem',
        docs: { description: 'Keeps the layers of src/ apart (eslint/layers.js)' },
        schema: [
          {
            type: 'object',
            properties: { srcDir: { type: 'string' } },
            required: ['srcDir'],
            additionalProperties: false,
          },
        ],
      },
      create(context) {
        const srcDir = context.options[0].srcDir;
        const fromRel = path.relative(srcDir, context.filename);
        if (fromRel.startsWith('..') || path.isAbsolute(fromRel)) return {};
        const fromParts = fromRel.split(path.sep);
        const from = fromParts.length > 1 ? fromParts[0] : undefined;
        const allowed = from !== undefined ? LAYERS[from] : undefined;

        const check = (node) => {
          const source = sourceOf(node);
          if (!source || !source.value.startsWith('.')) return; // packages and node: builtins
          const target = path.resolve(path.dirname(context.filename), source.value);
          const toRel = path.relative(srcDir, target);
          if (toRel.startsWith('..') || path.isAbsolute(toRel)) {
            const outside = path.relative(path.dirname(srcDir), target).split(path.sep)[0];
            context.report({
              node: source,
              message: `src/ never imports ${outside}/: sandbox/, bench/ and test/ may import src/, not the reverse`,
            });
            return;
          }
          const to = toRel.split(path.sep)[0];
          if (to === from) return;
          if (!allowed) {
            context.report({
              node: source,
              message: `${from ? `src/${from}/` : 'a file directly in src/'} is no layer: give it a row in eslint/layers.js`,
            });
            return;
          }
          if (!allowed.includes(to)) {
            const may =
              allowed.length > 0 ? allowed.map((l) => `${l}/`).join(', ') : 'nothing outside itself';
            context.report({
              node: source,
              message: `src/${from}/ may not import src/${to}/ (it may import ${may})`,
            });
          }
        };
        return {
          ImportDeclaration: check,
          ExportNamedDeclaration: check,
          ExportAllDeclaration: check,
          ImportExpression: check,
        };
      },
    },
  },
};
