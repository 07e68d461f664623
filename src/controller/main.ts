#!/usr/bin/env node
// harvester-machine-controller under Node (`node dist/src/controller/main.js [flags]`); the
// single executable runs the same function from src/bin/harvester-machine.ts.
import { ConfigError } from './process/config.js';
import { runControllerProcess } from './process-main.js';

runControllerProcess(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(
    `harvester-machine-controller: ${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
