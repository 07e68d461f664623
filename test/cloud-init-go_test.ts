// Our cloud-init user data against the Go driver's YAML and merge libraries themselves
// (test/go-cloudinit-merge: github.com/ghodss/yaml v1.0.0 over gopkg.in/yaml.v2 v2.4.0,
// dario.cat/mergo v1.0.2 with WithAppendSlice, the versions the Go driver builds with).
// The bytes differ by design (the layout is ours); what cloud-init
// reads must not: both are parsed as YAML 1.1 and compared. Where Go fails or changes a
// value, the test says so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { Document, parse } from 'yaml';
import {
  assembleUserData,
  cloudConfigProblem,
  type UserDataInputs,
} from '../src/harvester/cloud-init/cloud-init.js';
import { buildGoHelper, goSkipReason } from './support/go-helper.js';

const KEY = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7TESTKEYONLY test@example';
const INSTALL =
  '#cloud-config\nwrite_files:\n- path: /usr/local/custom_script/install.sh\n  content: H4sIAAAAAAAA/wAAAP//AQAA//8AAAAAAAAAAA==\n  permissions: "0644"\n  encoding: gzip+b64\nruncmd:\n- sh /usr/local/custom_script/install.sh\nhostname: node-a\n';
const POOL = '#cloud-config\npackage_update: true\npackages:\n  - qemu-guest-agent\n';

const base = (over: Partial<UserDataInputs>): UserDataInputs => ({
  sshUser: 'ubuntu',
  sshPassword: '',
  sshPublicKey: KEY,
  addUserToDockerGroup: false,
  userData: '',
  ...over,
});

// [name, inputs]; each runs through both and must mean the same to cloud-init.
const SAME_MEANING: Array<[string, UserDataInputs]> = [
  [
    "Rancher's usual job: key, pool user data, install script",
    base({ userData: POOL, cloudConfigContent: INSTALL }),
  ],
  ['with a password', base({ sshPassword: 'P@ssw0rd!', userData: POOL, cloudConfigContent: INSTALL })],
  [
    'the docker-group user',
    base({ addUserToDockerGroup: true, userData: POOL, cloudConfigContent: INSTALL }),
  ],
  [
    'lists appended in order, set values kept, maps merged key by key',
    base({
      userData:
        '#cloud-config\nruncmd: [first, second]\nhostname: from-user-data\nntp: {enabled: true}\nwrite_files: [{path: /etc/a, content: a}]\n',
      cloudConfigContent: `${INSTALL}ntp: {servers: [a.example]}\n`,
    }),
  ],
  [
    'YAML 1.1 values: octal, yes/no/on/off, nulls, quoted look-alikes',
    base({
      userData:
        '#cloud-config\nwrite_files:\n  - path: /etc/x\n    permissions: 0644\n    content: |\n      one\n      two: 2\nflags: [yes, no, on, off, ~]\nquoted: ["yes", "0755", "1e3", ""]\nratio: 1.50\nnothing: ~\n',
      cloudConfigContent: INSTALL,
    }),
  ],
  [
    'long strings (Go folds them at 80 columns) and strings that need quotes',
    base({
      userData:
        '#cloud-config\nruncmd:\n  - [ sh, -c, "echo a very long command line that goes on and on past eighty columns to see whether it gets folded" ]\nfinal_message: "done: $UPTIME"\nbootcmd: ["- dash", "#hash", "a: b", "@at", "`tick"]\n',
    }),
  ],
  [
    'duplicate keys: the last one wins',
    base({ userData: '#cloud-config\nhostname: a\nruncmd: [x]\nhostname: b\n' }),
  ],
  [
    'a value empty in one document is filled by the next',
    base({ userData: '#cloud-config\nhostname: ""\npackages: []\n', cloudConfigContent: INSTALL }),
  ],
  [
    'aliases and merge keys',
    base({ userData: '#cloud-config\nbase: &b {x: 1}\nother:\n  <<: *b\n  z: 2\n' }),
  ],
  [
    'a Jinja template header',
    base({ userData: '## template: jinja\n#cloud-config\nhostname: jinja\n', cloudConfigContent: INSTALL }),
  ],
  ['no key, no user data: the install script alone', base({ sshPublicKey: '', cloudConfigContent: INSTALL })],
];

// User data the Go driver's merge refuses; so do we, before anything is created.
const BOTH_REFUSE: Array<[string, string]> = [
  ['a shell script', '#!/bin/sh\necho hi\n'],
  ['a tab for indentation', '#cloud-config\nruncmd:\n\t- x\n'],
  ['a list, not a mapping', '- a\n- b\n'],
  ['unclosed flow', '#cloud-config\nruncmd: [a\n'],
  [
    'an unquoted Jinja expression',
    '## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.local_hostname }}\n',
  ],
];

interface GoResult {
  output?: string;
  error?: string;
}

/** Our base document (password block, key) for Go to merge into, as its driver merges into its own. */
function goDocuments(inputs: UserDataInputs): string[] {
  const ownPart = assembleUserData({ ...inputs, userData: '', cloudConfigContent: undefined });
  const docs = [ownPart.replace(/^#cloud-config\n/, '')];
  if (inputs.userData !== '') docs.push(inputs.userData);
  if (inputs.cloudConfigContent) docs.push(inputs.cloudConfigContent);
  return docs;
}

function runGo(
  binary: string,
  cases: Array<{ name: string; documents: string[] }>,
): Record<string, GoResult> {
  const run = spawnSync(binary, [], { input: JSON.stringify({ cases }), encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as Record<string, GoResult>;
}

/** What cloud-init (PyYAML, YAML 1.1) reads; the header lines are comments. */
const meaning = (text: string): unknown => parse(text, { version: '1.1', merge: true });

describe(
  "cloud-init user data against the Go driver's YAML and merge libraries",
  { skip: goSkipReason(), timeout: 300_000 },
  () => {
    let binary = '';
    before(() => {
      binary = buildGoHelper('go-cloudinit-merge');
    });

    it('means the same to cloud-init as what the Go driver writes', () => {
      const go = runGo(
        binary,
        SAME_MEANING.map(([name, inputs]) => ({ name, documents: goDocuments(inputs) })),
      );
      for (const [name, inputs] of SAME_MEANING) {
        const result = go[name];
        assert.equal(result?.error, undefined, `${name}: Go failed: ${result?.error}`);
        const ours = assembleUserData(inputs);
        const goText = result?.output ?? '';
        assert.deepEqual(
          meaning(ours),
          meaning(goText),
          `${name}\n--- ours ---\n${ours}--- Go ---\n${goText}`,
        );
      }
    });

    it("differs in bytes: Go sorts the keys, we keep their order; sorted, Rancher's usual jobs are byte-equal", () => {
      const usual = SAME_MEANING.slice(0, 2);
      const go = runGo(
        binary,
        usual.map(([name, inputs]) => ({ name, documents: goDocuments(inputs) })),
      );
      for (const [name, inputs] of usual) {
        const goText = go[name]?.output ?? '';
        const ours = assembleUserData(inputs).replace(/^#cloud-config\n/, '');
        assert.notEqual(ours, goText, name);
        // Key order is the whole difference here: every key sorted, ours is Go's, byte for byte.
        const sorted = new Document(parse(ours, { version: '1.1' }), { sortMapEntries: true }).toString({
          indentSeq: false,
          lineWidth: 0,
        });
        assert.equal(sorted, goText, name);
      }
    });

    it('refuses what the Go driver cannot merge, before anything is created', () => {
      const go = runGo(
        binary,
        BOTH_REFUSE.map(([name, userData]) => ({
          name,
          documents: ['ssh_authorized_keys: [k]\n', userData],
        })),
      );
      for (const [name, userData] of BOTH_REFUSE) {
        assert.ok(go[name]?.error, `${name}: Go merged it`);
        assert.ok(cloudConfigProblem(userData), `${name}: we take it`);
      }
    });

    it("keeps what Go's JSON round trip loses or breaks: big numbers, a password with ': '", () => {
      const go = runGo(binary, [
        { name: 'big', documents: ['a: 1\n', '#cloud-config\nbig: 100000000000000000000000\n'] },
        { name: 'password', documents: ['\nuser: u\npassword: P@ss: w0rd!\n', '#cloud-config\n'] },
      ]);
      // Go writes the integer as a float, 1e+23.
      assert.match(go['big']?.output ?? '', /^big: 1e\+23$/m);
      assert.match(
        assembleUserData(base({ userData: '#cloud-config\nbig: 100000000000000000000000\n' })),
        /^big: 100000000000000000000000$/m,
      );
      // The Go driver writes the password into YAML text unquoted, and its merge then fails the create.
      assert.ok(go['password']?.error, 'Go merges a password with ": "');
      const ours = assembleUserData(base({ sshPassword: 'P@ss: w0rd!', cloudConfigContent: INSTALL }));
      assert.equal((meaning(ours) as { password?: string }).password, 'P@ss: w0rd!');
    });
  },
);
