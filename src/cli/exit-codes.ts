// Exit codes scripts can rely on, and the one mapping from an error to its code. The
// help text below is printed by `harvester-machine --help`; keep the two in step.
import { CommanderError } from 'commander';
import { ConfigError } from '../driver/config/index.js';
import { CredentialRejectedError } from '../harvester-access/credential-error.js';
import { SavedConfigError } from '../driver/config/go-json.js';
import { KubeconfigError } from '../kube/kubeconfig-content.js';
import { PreCreateCheckError } from '../driver/operations/pre-create-check.js';
import { KubeError } from '../kube/errors.js';
import { ExitWithCode, MachineNotFoundError, UsageError } from './errors.js';

export const ExitCode = {
  Ok: 0,
  Failure: 1,
  /** A bad flag, argument or value; a confirmation that was required and not given. */
  Usage: 2,
  /** As rancher-machine: the pre-create check found a problem; nothing was created. */
  PreCreateCheckFailed: 3,
  /** No such machine in the store, or its VM no longer exists on Harvester. */
  NotFound: 4,
  /** Harvester refused the credential (expired, revoked): renew it. */
  CredentialRejected: 5,
  /** A wait ran past its deadline (--harvester-*-timeout). */
  Timeout: 6,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export const EXIT_CODES_HELP = `
Exit codes:
  0  success (doctor: every check passed or only warned)
  1  failure (doctor: a check failed)
  2  usage error: bad flag, argument or value, or a missing --yes
  3  pre-create check failed (nothing was created)
  4  machine not found (not in the store, or its VM is gone from Harvester)
  5  credential rejected or expired: renew the Harvester cloud credential
  6  timed out waiting (raise --harvester-create-timeout, -ip-timeout or -remove-timeout)`;

const COMMANDER_USAGE_CODES = new Set([
  'commander.unknownOption',
  'commander.unknownCommand',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.conflictingOption',
  'commander.excessArguments',
  'commander.invalidArgument',
  'commander.invalidOptionArgument',
  'commander.error',
]);

function fromKubeError(err: KubeError): ExitCodeValue {
  if (err.kind === 'CredentialRejected') return ExitCode.CredentialRejected;
  if (err.kind === 'Timeout') return ExitCode.Timeout;
  return ExitCode.Failure;
}

/** The exit code for an error; ExitWithCode carries its own. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof ExitWithCode) return err.exitCode;
  if (err instanceof CommanderError) {
    // --help and --version end through here too, with exit code 0.
    if (err.exitCode === 0) return ExitCode.Ok;
    return COMMANDER_USAGE_CODES.has(err.code) ? ExitCode.Usage : ExitCode.Failure;
  }
  if (err instanceof UsageError || err instanceof ConfigError || err instanceof KubeconfigError)
    return ExitCode.Usage;
  if (err instanceof PreCreateCheckError) return ExitCode.PreCreateCheckFailed;
  if (err instanceof MachineNotFoundError) return ExitCode.NotFound;
  if (err instanceof CredentialRejectedError) return ExitCode.CredentialRejected;
  if (err instanceof KubeError) return fromKubeError(err);
  if (err instanceof SavedConfigError) return ExitCode.Failure;
  return ExitCode.Failure;
}
