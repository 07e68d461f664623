// Object keys ("namespace/name") are built in one place, src/api/object-key.ts, so every cache,
// queue, map and message writes them the same way. This rule refuses building one by hand
// elsewhere in src/: a template literal with two expressions joined by a lone "/"
// (`${namespace}/${name}`, also inside a longer message), or `a + '/' + b`. A "/" before a value
// named prefix, version or subresource is no object key (a CIDR, an API group/version, a
// resource's subresource) and is let through.

const MESSAGE =
  'an object key ("namespace/name") is built only by src/api/object-key.ts: use keyText, keyTextOf or formatKey';

const isSlash = (node) => node && node.type === 'Literal' && node.value === '/';

/** What follows the "/" in a CIDR, an apiVersion or a subresource path. */
const NOT_A_NAME = new Set(['prefix', 'version', 'subresource']);

/** The last name of `x`, `a.b.x` or `a?.x`. */
function lastName(node) {
  if (!node) return undefined;
  if (node.type === 'ChainExpression') return lastName(node.expression);
  if (node.type === 'Identifier') return node.name;
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier')
    return node.property.name;
  return undefined;
}

const isKeyPart = (node) => !NOT_A_NAME.has(lastName(node) ?? '');

export const objectKeysPlugin = {
  rules: {
    'no-hand-built-keys': {
      meta: {
        type: 'problem',
        docs: { description: 'Object keys are built only by src/api/object-key.ts (eslint/object-keys.js)' },
        schema: [],
      },
      create(context) {
        return {
          TemplateLiteral(node) {
            for (let i = 1; i < node.quasis.length - 1; i++) {
              if (node.quasis[i].value.cooked === '/' && isKeyPart(node.expressions[i])) {
                context.report({ node, message: MESSAGE });
                return;
              }
            }
          },
          BinaryExpression(node) {
            // `a + '/' + b` parses as (a + '/') + b.
            if (node.operator !== '+' || node.left.type !== 'BinaryExpression') return;
            if (node.left.operator === '+' && isSlash(node.left.right) && isKeyPart(node.right)) {
              context.report({ node, message: MESSAGE });
            }
          },
        };
      },
    },
  },
};
