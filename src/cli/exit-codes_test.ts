import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommanderError } from 'commander';
import { ConfigError } from '../driver/config/index.js';
import { CredentialRejectedError } from '../harvester-access/credential-error.js';
import { PreCreateCheckError } from '../driver/operations/pre-create-check.js';
import { KubeError } from '../kube/errors.js';
import { WaitTimeoutError } from '../kube/wait.js';
import { ExitWithCode, MachineNotFoundError, UsageError } from './errors.js';
import { EXIT_CODES_HELP, ExitCode, exitCodeFor } from './exit-codes.js';

describe('exitCodeFor', () => {
  const cases: Array<[string, unknown, number]> = [
    [
      'unknown option',
      new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"),
      ExitCode.Usage,
    ],
    ['bad option value', new CommanderError(1, 'commander.invalidArgument', 'invalid'), ExitCode.Usage],
    ['missing argument', new CommanderError(1, 'commander.missingArgument', 'missing'), ExitCode.Usage],
    ['--help', new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), ExitCode.Ok],
    ['usage', new UsageError('x'), ExitCode.Usage],
    [
      'config',
      new ConfigError([{ flag: '--harvester-disk-size', message: '--harvester-disk-size: is required' }]),
      ExitCode.Usage,
    ],
    ['pre-create', new PreCreateCheckError(['image default/x not found']), ExitCode.PreCreateCheckFailed],
    ['not in the store', new MachineNotFoundError('machine "m" not found'), ExitCode.NotFound],
    [
      'driver credential',
      new CredentialRejectedError('rejected', { server: 'https://h' }, 'saved', 401),
      ExitCode.CredentialRejected,
    ],
    [
      'kube credential',
      new KubeError('CredentialRejected', 'list pvcs', 'Unauthorized', { statusCode: 401 }),
      ExitCode.CredentialRejected,
    ],
    [
      'wait timeout',
      new WaitTimeoutError('VM default/m to be Running', 'VM instance Scheduling', 60_000),
      ExitCode.Timeout,
    ],
    ['request deadline', new KubeError('Timeout', 'get vm', 'no answer'), ExitCode.Timeout],
    ['forbidden', new KubeError('Forbidden', 'get vm', 'forbidden', { statusCode: 403 }), ExitCode.Failure],
    ['anything else', new Error('boom'), ExitCode.Failure],
    ['explicit', new ExitWithCode(5), 5],
  ];
  for (const [what, err, code] of cases) {
    it(`${what} → ${code}`, () => assert.equal(exitCodeFor(err), code));
  }

  it('documents every exit code in --help', () => {
    for (const code of Object.values(ExitCode))
      assert.match(EXIT_CODES_HELP, new RegExp(`\\n  ${code}  \\S`));
  });
});
