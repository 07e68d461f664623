// docker-machine-driver-harvester under Node (`node dist/src/plugin/main.js`); the single
// executable runs the same function from src/bin/harvester-machine.ts.
import { runHarvesterPlugin } from './harvester-plugin.js';

void runHarvesterPlugin();
