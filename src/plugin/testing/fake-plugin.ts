// A plugin executable around FakeDriver, for the subprocess and Go interop tests:
// `node fake-plugin.js`, with the script in FAKE_DRIVER_SCRIPT (JSON) and an optional
// shorter watchdog in FAKE_PLUGIN_HEARTBEAT_TIMEOUT_MS.
import { runPlugin } from '../plugin-main.js';
import { FakeDriver } from './fake-driver.js';
import type { FakeDriverScript } from './fake-driver.js';

const script = JSON.parse(process.env.FAKE_DRIVER_SCRIPT ?? '{}') as FakeDriverScript;
const timeout = process.env.FAKE_PLUGIN_HEARTBEAT_TIMEOUT_MS;

await runPlugin((context) => new FakeDriver(script, context.logger), {
  heartbeatTimeoutMs: timeout === undefined ? undefined : Number(timeout),
});
