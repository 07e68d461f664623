// docker-machine-driver-harvester: the plugin executable rancher-machine launches.
// No top-level await: the single-executable build bundles this file to CommonJS.
import { HarvesterDriver } from '../driver/harvester-driver.js';
import { runPlugin } from './plugin-main.js';

void runPlugin(({ logger, argv, env }) => new HarvesterDriver({ logger, argv, env }));
