import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  assembleUserData,
  CLOUD_INIT_INLINE_LIMIT_BYTES,
  CloudInitError,
  cloudConfigProblem,
  placeCloudInit,
  withVmOwnerReference,
  type UserDataInputs,
} from './cloud-init.js';

const RKE2_INSTALL = 'runcmd:\n- sh /usr/local/custom_script/install.sh\n';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFake machine';

function userData(overrides: Partial<UserDataInputs> = {}): string {
  return assembleUserData({
    sshUser: 'ubuntu',
    sshPassword: '',
    addUserToDockerGroup: false,
    userData: '',
    ...overrides,
  });
}

const body = (text: string): unknown => parse(text, { version: '1.1' });

describe('assembleUserData: the Go driver’s own cases', () => {
  it('nothing given: just the header', () => {
    assert.equal(userData(), '#cloud-config\n');
  });

  it('only the install script', () => {
    assert.equal(userData({ cloudConfigContent: RKE2_INSTALL }), `#cloud-config\n${RKE2_INSTALL}`);
  });

  it('user data then the install script: runcmd appended after the user’s', () => {
    const user =
      '#cloud-config\npackage_update: true\npackages:\n- qemu-guest-agent\nruncmd:\n- - systemctl\n- - enable\n- - --now\n- - qemu-guest-agent.service\n';
    assert.equal(
      userData({ userData: user, cloudConfigContent: RKE2_INSTALL }),
      '#cloud-config\npackage_update: true\npackages:\n- qemu-guest-agent\nruncmd:\n- - systemctl\n- - enable\n- - --now\n' +
        '- - qemu-guest-agent.service\n- sh /usr/local/custom_script/install.sh\n',
    );
  });
});

describe('assembleUserData: password and key', () => {
  it('password block, quoted safely (a numeric or odd password stays a string)', () => {
    for (const password of ['123456', 'pa: ss #1', 'yes']) {
      const text = userData({ sshPassword: password });
      assert.ok(text.startsWith('#cloud-config\n'));
      assert.deepEqual(body(text), {
        user: 'ubuntu',
        password,
        chpasswd: { expire: false },
        ssh_pwauth: true,
      });
    }
  });

  it('SSH key: authorized for the default user, or a sudo+docker user', () => {
    assert.deepEqual(body(userData({ sshPublicKey: `${KEY}\n` })), { ssh_authorized_keys: [KEY] });
    assert.deepEqual(body(userData({ sshPublicKey: KEY, addUserToDockerGroup: true })), {
      groups: ['docker'],
      users: [
        {
          name: 'ubuntu',
          sudo: 'ALL=(ALL) NOPASSWD:ALL',
          groups: 'sudo, docker',
          shell: '/bin/bash',
          ssh_authorized_keys: [KEY],
        },
      ],
    });
  });

  it('user data is merged into the password/key block; lists appended, earlier scalars kept (mergo without override)', () => {
    const text = userData({
      sshPassword: 'pw',
      sshPublicKey: KEY,
      userData:
        'ssh_pwauth: false\nuser: root\nssh_authorized_keys: [ssh-rsa AAAAother user2]\nhostname: node-a\n',
      cloudConfigContent: 'hostname: ignored\nwrite_files:\n- path: /etc/x\n  content: x\n',
    });
    assert.deepEqual(body(text), {
      user: 'ubuntu',
      password: 'pw',
      chpasswd: { expire: false },
      // false is "empty" to mergo, so the block's true wins over the user's false: Go's quirk, kept.
      ssh_pwauth: true,
      ssh_authorized_keys: [KEY, 'ssh-rsa AAAAother user2'],
      hostname: 'node-a',
      write_files: [{ path: '/etc/x', content: 'x' }],
    });
  });
});

describe('assembleUserData: merge rules', () => {
  it('maps merge key by key at any depth; empty values are filled; null sources change nothing', () => {
    const text = userData({
      userData: 'a:\n  b: 1\n  c: ""\n  d: {x: 1}\nkeep: value\n',
      cloudConfigContent: 'a:\n  c: filled\n  d: {w: 2}\n  e: new\nkeep:\n',
    });
    assert.deepEqual(body(text), { a: { b: 1, c: 'filled', d: { x: 1, w: 2 }, e: 'new' }, keep: 'value' });
  });

  it('a list meeting a non-list is an error (Go: "cannot append two slices with different type")', () => {
    assert.throws(
      () => userData({ userData: 'runcmd: echo\n', cloudConfigContent: RKE2_INSTALL }),
      (err: unknown) => err instanceof CloudInitError && /runcmd/.test(err.message),
    );
  });

  it('keeps every value exactly as written (0644, quoted strings, flow lists)', () => {
    const text = userData({
      userData:
        "write_files:\n- path: /etc/x\n  permissions: 0644\n  owner: 'root:root'\nbootcmd:\n- [sh, -c, 'echo \"a: b\"']\n",
    });
    assert.match(text, /permissions: 0644\n/);
    assert.match(text, /owner: 'root:root'\n/);
    assert.match(text, /- \[ sh, -c, 'echo "a: b"' \]\n/);
  });

  it('takes what the Go driver takes: duplicate keys (the last wins), big integers (exact), an empty user (null)', () => {
    const text = userData({
      userData: '#cloud-config\nhostname: a\nbig: 100000000000000000000000\nhostname: b\n',
    });
    assert.match(text, /^hostname: b$/m);
    assert.doesNotMatch(text, /^hostname: a$/m);
    assert.match(text, /^big: 100000000000000000000000$/m);
    assert.equal(cloudConfigProblem('a: 1\na: 2\n'), undefined);
    assert.deepEqual(body(userData({ sshUser: '', sshPassword: 'pw' })), {
      user: null,
      password: 'pw',
      chpasswd: { expire: false },
      ssh_pwauth: true,
    });
  });

  it('refuses an unquoted Jinja expression (it parses as a mapping key), as the Go merge does; a quoted one works', () => {
    const jinja = '## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.local_hostname }}\n';
    assert.match(cloudConfigProblem(jinja) ?? '', /unquoted Jinja/);
    const quoted = userData({
      userData: "## template: jinja\n#cloud-config\nhostname: '{{ ds.meta_data.local_hostname }}'\n",
    });
    assert.match(quoted, /^hostname: "?'?\{\{ ds\.meta_data\.local_hostname \}\}'?"?$/m);
  });

  it('expands anchors and aliases, drops comments', () => {
    const text = userData({
      userData: '# mine\nbase: &b {x: 1}\ncopy: *b # same\n',
      cloudConfigContent: 'copy: {w: 2}\n',
    });
    assert.deepEqual(body(text), { base: { x: 1 }, copy: { x: 1, w: 2 } });
    assert.ok(!text.includes('#') || text.indexOf('#') === 0, 'only the header comment remains');
  });

  it('keeps "## template: jinja" as the very first line', () => {
    const jinja = '## template: jinja\n#cloud-config\nhostname: "{{ ds.meta_data.local_hostname }}"\n';
    const text = userData({ userData: jinja, cloudConfigContent: RKE2_INSTALL });
    assert.ok(text.startsWith('## template: jinja\n#cloud-config\n'), text);
    assert.deepEqual(body(text), {
      hostname: '{{ ds.meta_data.local_hostname }}',
      runcmd: ['sh /usr/local/custom_script/install.sh'],
    });
    assert.ok(!userData({ userData: 'a: 1\n## template: jinja\n' }).startsWith('## template'));
  });

  it('rejects user data that is not a cloud-config mapping, without quoting it', () => {
    assert.equal(cloudConfigProblem('a: 1\n'), undefined);
    assert.equal(cloudConfigProblem('# only a comment\n'), undefined);
    assert.match(cloudConfigProblem('- a\n') ?? '', /must be a YAML mapping/);
    assert.match(
      cloudConfigProblem('password: s3cret-value\n  bad: [') ?? '',
      /^is not valid YAML \(line \d+/,
    );
    assert.ok(!(cloudConfigProblem('password: s3cret-value\n  bad: [') ?? '').includes('s3cret'));
    assert.throws(
      () => userData({ cloudConfigContent: '- not a map\n' }),
      /cloud-config file must be a YAML mapping/,
    );
  });
});

describe('placeCloudInit: inline or Secret', () => {
  const place = (user: string, network: string, alwaysInSecret = false) =>
    placeCloudInit({ vmName: 'vm1', namespace: 'ns1', userData: user, networkData: network, alwaysInSecret });
  const ofSize = (bytes: number): string => `#cloud-config\n${'x: '.padEnd(bytes - 15, 'y')}\n`;
  const NET = 'version: 2\nethernets: {eth0: {dhcp4: true}}\n';

  it('2048 bytes stay inline, 2049 go to the Secret', () => {
    assert.equal(Buffer.byteLength(ofSize(2048)), CLOUD_INIT_INLINE_LIMIT_BYTES);
    assert.deepEqual(place(ofSize(2048), ''), { source: { userData: ofSize(2048) } });
    const big = place(ofSize(2049), '');
    assert.deepEqual(big.source, { secretRef: { name: 'vm1-cloudinit' } });
    assert.equal(big.secret?.metadata.name, 'vm1-cloudinit');
    assert.equal(big.secret?.metadata.namespace, 'ns1');
    assert.deepEqual(Object.keys(big.secret?.data ?? {}), ['userdata']);
    assert.equal(Buffer.from(big.secret?.data?.['userdata'] ?? '', 'base64').toString(), ofSize(2049));
  });

  it('counts bytes, not characters', () => {
    const multibyte = `#cloud-config\nx: ${'é'.repeat(1020)}\n`; // 1020 characters of 2 bytes
    assert.ok(multibyte.length < 2048 && Buffer.byteLength(multibyte) > 2048);
    assert.ok(place(multibyte, '').secret);
  });

  it('large user data takes the network data with it (as in Go)', () => {
    const r = place(ofSize(3000), NET);
    assert.deepEqual(r.source, {
      secretRef: { name: 'vm1-cloudinit' },
      networkDataSecretRef: { name: 'vm1-cloudinit' },
    });
    assert.deepEqual(Object.keys(r.secret?.data ?? {}), ['userdata', 'networkdata']);
  });

  it('FIX: large network data goes to the Secret even when the user data is small', () => {
    const bigNet = `version: 1\nconfig:\n${'- {type: nameserver, address: [10.0.0.1]}\n'.repeat(60)}`;
    assert.ok(Buffer.byteLength(bigNet) > 2048);
    const r = place('#cloud-config\n', bigNet);
    assert.deepEqual(r.source, {
      userData: '#cloud-config\n',
      networkDataSecretRef: { name: 'vm1-cloudinit' },
    });
    assert.deepEqual(Object.keys(r.secret?.data ?? {}), ['networkdata']);
  });

  it('small network data stays inline with small user data', () => {
    assert.deepEqual(place('#cloud-config\n', NET), {
      source: { userData: '#cloud-config\n', networkData: NET },
    });
  });

  it('--harvester-cloud-init-in-secret puts both in the Secret whatever their size', () => {
    const r = place('#cloud-config\n', NET, true);
    assert.deepEqual(r.source, {
      secretRef: { name: 'vm1-cloudinit' },
      networkDataSecretRef: { name: 'vm1-cloudinit' },
    });
    assert.equal(Buffer.from(r.secret?.data?.['networkdata'] ?? '', 'base64').toString(), NET);
  });

  it('the Secret gets the VM as owner once the VM has a uid', () => {
    const { secret } = place(ofSize(4000), '');
    assert.ok(secret);
    const vm = {
      apiVersion: 'kubevirt.io/v1' as const,
      kind: 'VirtualMachine' as const,
      metadata: { name: 'vm1', uid: 'u-1' },
    };
    assert.deepEqual(withVmOwnerReference(secret, vm).metadata.ownerReferences, [
      { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'vm1', uid: 'u-1' },
    ]);
    assert.throws(() => withVmOwnerReference(secret, { ...vm, metadata: { name: 'vm1' } }), /no uid/);
  });
});
