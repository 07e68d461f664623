// Imported first by a file that runs several stand-in test files in one process: from here on,
// each of their useHarvester() calls answers with one Harvester for all of them (testing.ts).
import { shareOneHarvester } from './testing.js';

shareOneHarvester();
