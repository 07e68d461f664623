// Imported first by a file that runs several test files in one process: from here on, each
// of their useSandbox() calls answers with one sandbox for all of them (sandbox-fixture.ts).
import { shareOneSandbox } from './sandbox-fixture.js';

shareOneSandbox();
