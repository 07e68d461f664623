// The pure layers of src/ (decisions and shapes, no I/O), as a lint rule: no async function,
// no await, no Promise (as a value or a type), no dynamic import, and no import of a module
// that reaches a file, the network, a process or Kubernetes. Their tests (*_test.ts) may be
// async: node:test runs them. ADR 0026.

/** The folders of src/ that hold no I/O. */
export const PURE_LAYERS = ['harvester', 'rancher', 'api', 'common'];

/** Modules that do I/O (with or without the node: prefix, and their subpaths). */
const IO_MODULES = [
  'fs',
  'net',
  'http',
  'https',
  'http2',
  'child_process',
  'dns',
  'dgram',
  'tls',
  'worker_threads',
  '@kubernetes/client-node',
];

/** The few pure functions an I/O module exports that a pure layer may use. */
const PURE_NAMES = { net: ['isIP', 'isIPv4', 'isIPv6'] };

/** The I/O module `source` is (node: prefix and subpath removed), or undefined. */
function ioModule(source) {
  const bare = source.startsWith('node:') ? source.slice('node:'.length) : source;
  return IO_MODULES.find((m) => bare === m || bare.startsWith(`${m}/`));
}

/** The names an import takes, or undefined when it takes the whole module (default, namespace, side effect). */
function importedNames(node) {
  if (node.type !== 'ImportDeclaration' || node.specifiers.length === 0) return undefined;
  const names = [];
  for (const s of node.specifiers) {
    if (s.type !== 'ImportSpecifier') return undefined;
    names.push(s.imported.type === 'Identifier' ? s.imported.name : String(s.imported.value));
  }
  return names;
}

const PURE = 'is a pure layer (no I/O: eslint/pure-layers.js)';

export const pureLayersPlugin = {
  rules: {
    'no-io': {
      meta: {
        type: 'problem',
        docs: { description: 'Keeps I/O out of the pure layers of src/ (eslint/pure-layers.js)' },
        schema: [],
      },
      create(context) {
        const layer = () => {
          const match = /(?:^|[\\/])src[\\/]([^\\/]+)[\\/]/.exec(context.filename);
          return match ? match[1] : 'src';
        };
        const report = (node, what) => context.report({ node, message: `src/${layer()}/ ${PURE}: ${what}` });
        const checkFunction = (node) => {
          if (node.async) report(node, 'no async function (the caller does the I/O and passes the result)');
        };
        const checkImport = (node) => {
          const source = node.source;
          if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
          const io = ioModule(source.value);
          if (!io) return;
          const names = importedNames(node);
          const allowed = PURE_NAMES[io] ?? [];
          if (names && names.every((n) => allowed.includes(n))) return;
          report(source, `no import of ${source.value}`);
        };
        return {
          FunctionDeclaration: checkFunction,
          FunctionExpression: checkFunction,
          ArrowFunctionExpression: checkFunction,
          AwaitExpression: (node) => report(node, 'no await'),
          ForOfStatement: (node) => {
            if (node.await) report(node, 'no for await');
          },
          ImportExpression: (node) => report(node, 'no dynamic import'),
          ImportDeclaration: checkImport,
          ExportNamedDeclaration: checkImport,
          ExportAllDeclaration: checkImport,
          Identifier: (node) => {
            if (node.name === 'Promise' || node.name === 'PromiseLike')
              report(node, `no ${node.name} (the caller does the I/O and passes the result)`);
          },
        };
      },
    },
  },
};
