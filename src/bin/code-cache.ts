// The bundle is compiled as Node compiles a CommonJS module (Module.wrap), with V8's code
// cache made at build time from the same source string: V8 accepts a cache only for the
// exact source it was made from (and the same V8 version and flags), whatever the file
// name. Used by the bootstrap at run time and by make-code-cache.ts at build time.
import Module from 'node:module';
import vm from 'node:vm';

export type ModuleWrapper = (
  exports: unknown,
  require: NodeJS.Require,
  module: Module,
  filename: string,
  dirname: string,
) => void;

export function compileBundle(source: string, filename: string, cachedData?: Buffer): vm.Script {
  return new vm.Script(Module.wrap(source), { filename, ...(cachedData ? { cachedData } : {}) });
}
