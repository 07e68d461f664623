// The Harvester driver served as a rancher-machine plugin: what docker-machine-driver-harvester
// runs (from plugin/main.ts under Node, or from the single executable's dispatcher).
import { HarvesterDriver } from '../driver/harvester-driver.js';
import { runPlugin, type RunningPlugin } from './plugin-main.js';

export function runHarvesterPlugin(): Promise<RunningPlugin | undefined> {
  return runPlugin(({ logger, argv, env }) => new HarvesterDriver({ logger, argv, env }));
}
