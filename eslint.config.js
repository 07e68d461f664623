// Type-aware lint: the rules that catch real bugs in async Kubernetes code
// (floating promises, misused promises, unsafe any) are errors, not warnings.
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersPlugin } from './eslint/layers.js';
import { PURE_LAYERS, pureLayersPlugin } from './eslint/pure-layers.js';
import { objectKeysPlugin } from './eslint/object-keys.js';
import { harvesterAccessPlugin } from './eslint/harvester-access.js';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '**/*.js', '!eslint.config.js', '!eslint/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself tracks.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      complexity: ['error', 25],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Which folder of src/ may import which (eslint/layers.js); test/lint-layers_test.ts proves it.
    files: ['src/**/*.ts'],
    plugins: { layers: layersPlugin },
    rules: { 'layers/imports': ['error', { srcDir: path.join(import.meta.dirname, 'src') }] },
  },
  {
    // No I/O in the pure layers (eslint/pure-layers.js); test/lint-pure_test.ts proves it.
    files: PURE_LAYERS.map((layer) => `src/${layer}/**/*.ts`),
    ignores: ['**/*_test.ts'],
    plugins: { pure: pureLayersPlugin },
    rules: { 'pure/no-io': 'error' },
  },
  {
    // Object keys ("namespace/name") are built only in src/api (eslint/object-keys.js);
    // test/lint-object-keys_test.ts proves it.
    files: ['src/**/*.ts'],
    ignores: ['src/api/**', 'src/**/*_test.ts'],
    plugins: { 'object-keys': objectKeysPlugin },
    rules: { 'object-keys/no-hand-built-keys': 'error' },
  },
  {
    // The driver, the CLI and the controller reach Harvester only through src/harvester-access
    // (eslint/harvester-access.js); test/lint-harvester-access_test.ts proves it.
    files: ['src/{driver,cli,controller,plugin,bin}/**/*.ts'],
    ignores: ['src/**/*_test.ts'],
    plugins: { 'harvester-access': harvesterAccessPlugin },
    rules: { 'harvester-access/only-through-access': 'error' },
  },
  {
    // The sandbox is written as src is (stand-ins as small setups and reconcilers): no function
    // over 100 lines. Tests' describe blocks are not held to it.
    files: ['sandbox/**/*.ts'],
    ignores: ['**/*_test.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }] },
  },
  { files: ['eslint.config.js', 'eslint/*.js'], ...tseslint.configs.disableTypeChecked },
);
