// A MachineDriver for tests of the plugin layer: it keeps its config in memory and
// follows a script (slow calls, errors, crashes) instead of talking to Harvester.
import { MachineState } from '../../driver/machine-driver.js';
import type { FlagValue, FlagValues, MachineDriver, McnFlag } from '../../driver/machine-driver.js';
import { silentLogger } from '../../log/logger.js';
import type { Logger } from '../../log/logger.js';

type FakeMethod = Exclude<keyof MachineDriver, 'driverName'>;

export interface FakeDriverScript {
  /** How long create() takes. */
  readonly createDelayMs?: number;
  /** Methods that throw new Error(message). */
  readonly errors?: Partial<Record<FakeMethod, string>>;
  /** Methods that crash: a TypeError, or a thrown string. */
  readonly crashes?: Partial<Record<FakeMethod, 'TypeError' | 'string'>>;
}

export const FAKE_FLAGS: McnFlag[] = [
  { kind: 'string', name: 'fake-kc', usage: 'kubeconfig', envVar: 'FAKE_KC', value: 'dflt' },
  { kind: 'int', name: 'fake-cpu', usage: 'cpus', envVar: 'FAKE_CPU', value: 2 },
  { kind: 'bool', name: 'fake-debug', usage: 'debug', envVar: 'FAKE_DEBUG' },
  { kind: 'stringSlice', name: 'fake-list', usage: 'list', envVar: '', value: ['a', 'b'] },
];

export class FakeDriver implements MachineDriver {
  readonly calls: string[] = [];
  config: Record<string, unknown> = {};
  flagValues = new Map<string, FlagValue>();

  constructor(
    private readonly script: FakeDriverScript = {},
    private readonly log: Logger = silentLogger,
  ) {}

  driverName(): string {
    return 'fake';
  }
  getCreateFlags(): McnFlag[] {
    this.enter('getCreateFlags');
    return FAKE_FLAGS;
  }
  setConfigRaw(json: Uint8Array): void {
    this.enter('setConfigRaw');
    this.config = JSON.parse(Buffer.from(json).toString('utf8')) as Record<string, unknown>;
  }
  getConfigRaw(): Uint8Array {
    this.enter('getConfigRaw');
    const flags = Object.fromEntries(this.flagValues);
    return Buffer.from(JSON.stringify({ ...this.config, FlagValues: flags }));
  }
  setConfigFromFlags(values: FlagValues): void {
    this.enter('setConfigFromFlags');
    this.flagValues = new Map(values);
  }
  getMachineName(): string {
    this.enter('getMachineName');
    return typeof this.config.MachineName === 'string' ? this.config.MachineName : '';
  }
  getSSHKeyPath(): string {
    this.enter('getSSHKeyPath');
    return '/tmp/store/machines/m1/id_rsa';
  }
  getSSHUsername(): string {
    this.enter('getSSHUsername');
    return 'ubuntu';
  }
  getSSHPort(): number {
    this.enter('getSSHPort');
    return typeof this.config.SSHPort === 'number' ? this.config.SSHPort : 22;
  }
  getSSHHostname(): Promise<string> {
    return this.async('getSSHHostname', () => '10.0.0.7');
  }
  getURL(): Promise<string> {
    return this.async('getURL', () => 'tcp://10.0.0.7:2376');
  }
  getIP(): Promise<string> {
    return this.async('getIP', () => '10.0.0.7');
  }
  getIPv6(): Promise<string> {
    return this.async('getIPv6', () => '');
  }
  getState(): Promise<MachineState> {
    return this.async('getState', () => MachineState.Running);
  }
  preCreateCheck(): Promise<void> {
    return this.async('preCreateCheck', () => undefined);
  }
  async create(): Promise<void> {
    this.enter('create');
    this.log.info('Creating the fake machine');
    await new Promise((resolve) => setTimeout(resolve, this.script.createDelayMs ?? 0));
    this.log.debug('The fake machine is created');
  }
  remove(): Promise<void> {
    return this.async('remove', () => undefined);
  }
  start(): Promise<void> {
    return this.async('start', () => undefined);
  }
  stop(): Promise<void> {
    return this.async('stop', () => undefined);
  }
  restart(): Promise<void> {
    return this.async('restart', () => undefined);
  }
  kill(): Promise<void> {
    return this.async('kill', () => undefined);
  }

  private async async<T>(method: FakeMethod, value: () => T): Promise<T> {
    await Promise.resolve();
    this.enter(method);
    return value();
  }

  private enter(method: FakeMethod): void {
    this.calls.push(method);
    const error = this.script.errors?.[method];
    if (error !== undefined) throw new Error(error);
    const crash = this.script.crashes?.[method];
    if (crash === 'TypeError') {
      const nothing = undefined as unknown as { field: string };
      // A real bug: reading a property of undefined.
      void nothing.field;
    }
    if (crash === 'string') {
      // eslint-disable-next-line @typescript-eslint/only-throw-error
      throw `${method} went wrong`;
    }
  }
}
