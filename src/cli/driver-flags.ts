// The plugin's --harvester-* flags as commander options, generated from FLAG_TABLE (the
// one flag table), and the FlagValues a driver gets from them. Precedence is
// rancher-machine's: the command line, then the flag's environment variable, then its
// default. Environment values are read here rather than by commander, because commander
// takes any value of a boolean flag's variable as true (rancher-machine parses it).
import { InvalidArgumentError, Option, type Command } from 'commander';
import { FLAG_TABLE, FLAGS, type FlagSpec } from '../driver/config/flags.js';
import type { FlagValue } from '../driver/machine-driver.js';
import { UsageError } from './errors.js';

const WHOLE_NUMBER = /^[+-]?\d{1,15}$/;
/** Go's strconv.ParseBool, which urfave/cli applies to boolean flags' environment variables. */
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

function describeDefault(spec: FlagSpec): string {
  return spec.kind === 'string' ? JSON.stringify(spec.defaultValue) : String(spec.defaultValue);
}

function parseWholeNumber(value: string): number {
  if (!WHOLE_NUMBER.test(value.trim())) throw new InvalidArgumentError('must be a whole number.');
  return Number(value.trim());
}

/** The commander option for one flag; its help shows the default and the variable. */
export function optionFor(spec: FlagSpec): Option {
  const help = `${spec.usage.trim()} (default: ${describeDefault(spec)}; env: ${spec.envVar})`;
  switch (spec.kind) {
    case 'string':
      return new Option(`--${spec.name} <value>`, help);
    case 'int':
      return new Option(`--${spec.name} <n>`, help).argParser(parseWholeNumber);
    case 'bool':
      return new Option(`--${spec.name}`, help);
  }
}

/** Every flag of the table, for `create`. */
export function addDriverFlags(command: Command): Command {
  for (const spec of FLAG_TABLE) command.addOption(optionFor(spec));
  return command;
}

/** Only the kubeconfig flag: what a stored machine's commands accept to replace a stale credential. */
export function addFreshCredentialFlag(command: Command): Command {
  return command.addOption(optionFor(FLAGS.kubeconfigContent));
}

function attributeName(spec: FlagSpec): string {
  return new Option(`--${spec.name}`).attributeName();
}

function fromEnv(spec: FlagSpec, raw: string): FlagValue {
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'int':
      if (!WHOLE_NUMBER.test(raw.trim()))
        throw new UsageError(`${spec.envVar} (for --${spec.name}) must be a whole number`);
      return Number(raw.trim());
    case 'bool':
      if (TRUE.has(raw.trim())) return true;
      if (FALSE.has(raw.trim())) return false;
      throw new UsageError(`${spec.envVar} (for --${spec.name}) must be true or false`);
  }
}

/**
 * Every flag's value for SetConfigFromFlags: given on the command line, else from its
 * environment variable (an empty variable counts as unset), else its default.
 */
export function collectFlagValues(
  parsed: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Map<string, FlagValue> {
  const values = new Map<string, FlagValue>();
  for (const spec of FLAG_TABLE) {
    const given = parsed[attributeName(spec)];
    const fromVariable = env[spec.envVar];
    if (given !== undefined) values.set(spec.name, given as FlagValue);
    else if (fromVariable !== undefined && fromVariable !== '')
      values.set(spec.name, fromEnv(spec, fromVariable));
    else values.set(spec.name, spec.defaultValue);
  }
  return values;
}

/** The command-line value of a flag, if it was given there. */
export function givenFlag(parsed: Readonly<Record<string, unknown>>, spec: FlagSpec): unknown {
  return parsed[attributeName(spec)];
}
