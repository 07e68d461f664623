import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from 'node:test';
import { redact } from '../log/redact.js';
import {
  ProxyConfigError,
  chooseProxy,
  environmentProxy,
  parseEnvironmentProxy,
  parseKubeconfigProxy,
  splitHostPort,
} from './proxy-environment.js';

const PROXY = 'http://proxy.corp:3128';

function proxied(target: string, noProxy: string, extra: Record<string, string> = {}): boolean {
  return (
    environmentProxy(new URL(target), {
      HTTPS_PROXY: PROXY,
      HTTP_PROXY: PROXY,
      NO_PROXY: noProxy,
      ...extra,
    }) !== undefined
  );
}

describe('environmentProxy: Go ProxyFromEnvironment rules', () => {
  it('takes HTTPS_PROXY for https servers and HTTP_PROXY for http ones', () => {
    const env = { HTTPS_PROXY: 'http://s:1', HTTP_PROXY: 'http://p:2' };
    assert.equal(environmentProxy(new URL('https://api.example:6443'), env)?.url.host, 's:1');
    assert.equal(environmentProxy(new URL('http://api.example:8080'), env)?.url.host, 'p:2');
    assert.equal(environmentProxy(new URL('https://api.example'), { HTTP_PROXY: 'http://p:2' }), undefined);
  });

  it('prefers the upper-case variable when both are set, and uses the lower-case one alone', () => {
    const both = { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2' };
    assert.deepEqual(
      [
        environmentProxy(new URL('https://a.example'), both)?.url.host,
        environmentProxy(new URL('https://a.example'), both)?.source,
      ],
      ['upper:1', 'HTTPS_PROXY'],
    );
    const lower = { https_proxy: 'http://lower:2' };
    assert.equal(environmentProxy(new URL('https://a.example'), lower)?.source, 'https_proxy');
    // An empty upper-case value does not hide the lower-case one (Go's getEnvAny).
    assert.equal(
      environmentProxy(new URL('https://a.example'), { HTTPS_PROXY: '', https_proxy: 'http://l:2' })?.url
        .host,
      'l:2',
    );
    // NO_PROXY likewise.
    assert.equal(proxied('https://a.example', '', { no_proxy: 'a.example' }), false);
    assert.equal(proxied('https://a.example', 'b.example', { no_proxy: 'a.example' }), true);
  });

  it('never proxies localhost or loopback addresses, whatever NO_PROXY says', () => {
    for (const target of [
      'https://localhost:6443',
      'https://127.0.0.1:6443',
      'https://127.8.9.10',
      'https://[::1]:6443',
      'https://[::ffff:127.0.0.1]:6443',
    ]) {
      assert.equal(proxied(target, ''), false, target);
    }
    // Only the exact name: a subdomain of localhost is a name like any other.
    assert.equal(proxied('https://api.localhost', ''), true);
  });

  it('matches NO_PROXY domains with and without a leading dot, and *.', () => {
    assert.equal(proxied('https://harvester.example.com', 'example.com'), false);
    assert.equal(proxied('https://example.com', 'example.com'), false);
    assert.equal(proxied('https://badexample.com', 'example.com'), true);
    assert.equal(proxied('https://harvester.example.com', '.example.com'), false);
    assert.equal(
      proxied('https://example.com', '.example.com'),
      true,
      'a leading dot matches subdomains only',
    );
    assert.equal(proxied('https://harvester.example.com', '*.example.com'), false);
    assert.equal(proxied('https://example.com', '*.example.com'), true);
    assert.equal(proxied('https://HARVESTER.Example.COM', ' Example.Com '), false, 'case and spaces ignored');
    assert.equal(proxied('https://a.example', 'x.test,, a.example ,y.test'), false, 'a list');
  });

  it('matches NO_PROXY ports when the entry has one (the URL default port counts)', () => {
    assert.equal(proxied('https://a.example:6443', 'a.example:6443'), false);
    assert.equal(proxied('https://a.example:6443', 'a.example:443'), true);
    assert.equal(proxied('https://a.example', 'a.example:443'), false);
    assert.equal(proxied('http://a.example', 'a.example:80'), false);
    assert.equal(proxied('https://a.example:6443', '.example:6443'), false);
  });

  it('matches NO_PROXY IP addresses and CIDRs, IPv4 and IPv6', () => {
    assert.equal(proxied('https://10.1.2.3:6443', '10.1.2.3'), false);
    assert.equal(proxied('https://10.1.2.3:6443', '10.1.2.4'), true);
    assert.equal(proxied('https://10.1.2.3:6443', '10.1.2.3:6443'), false);
    assert.equal(proxied('https://10.1.2.3:6443', '10.1.2.3:443'), true);
    assert.equal(proxied('https://10.1.2.3', '10.0.0.0/8'), false);
    assert.equal(proxied('https://11.1.2.3', '10.0.0.0/8'), true);
    assert.equal(proxied('https://10.1.2.3', '10.1.2.99/24'), false, 'host bits in a CIDR are ignored');
    assert.equal(proxied('https://[2001:db8::5]:6443', '2001:db8::/32'), false);
    assert.equal(proxied('https://[2001:db9::5]:6443', '2001:db8::/32'), true);
    assert.equal(proxied('https://[2001:db8::5]:6443', '2001:db8::5'), false);
    assert.equal(proxied('https://[2001:db8::5]:6443', '[2001:db8::5]:6443'), false);
    assert.equal(proxied('https://[2001:db8::5]:6443', '[2001:db8::5]:1'), true);
    // A CIDR does not match a name, a name entry does not match an IP.
    assert.equal(proxied('https://a.example', '0.0.0.0/0'), true);
    assert.equal(proxied('https://10.1.2.3', '1.2.3'), true);
  });

  it('treats * as everything and skips malformed entries', () => {
    assert.equal(proxied('https://a.example', '*'), false);
    assert.equal(proxied('https://10.9.9.9', 'x.test,*'), false);
    assert.equal(proxied('https://a.example', ':80,[,,'), true);
  });
});

describe('proxy URLs', () => {
  it('takes host:port as http://host:port, as Go does', () => {
    assert.equal(parseEnvironmentProxy('proxy.corp:3128', 'HTTPS_PROXY').href, 'http://proxy.corp:3128/');
    assert.equal(parseEnvironmentProxy('127.0.0.1:3128', 'HTTPS_PROXY').href, 'http://127.0.0.1:3128/');
    assert.equal(parseEnvironmentProxy('https://p:443', 'HTTPS_PROXY').protocol, 'https:');
    assert.equal(parseEnvironmentProxy('socks5://p:1080', 'HTTPS_PROXY').protocol, 'socks5:');
  });

  it('refuses an unusable value naming the variable and without its password', () => {
    assert.throws(
      () => parseEnvironmentProxy('ftp://u:hunter2hunter2@p:21', 'HTTPS_PROXY'),
      (err: Error) =>
        err instanceof ProxyConfigError &&
        /HTTPS_PROXY: scheme "ftp"/.test(err.message) &&
        !err.message.includes('hunter2'),
    );
  });

  it('never echoes any part of a password that holds "@": userinfo ends at the last "@", as in Go', () => {
    const password = fc
      .stringMatching(/^[A-Za-z0-9@!$&*+,;=:]{4,24}$/)
      .filter((p) => p.includes('@') && !p.startsWith('@'));
    fc.assert(
      fc.property(password, fc.constantFrom('http://', 'https://', 'socks5://', ''), (pw, scheme) => {
        // An unusable port: the value is quoted back in the error, without its userinfo.
        const value = `${scheme}user:${pw}@proxy.test:99999x`;
        if (scheme !== '')
          assert.equal(
            String(parseKubeconfigProxy(value)),
            `proxy-url "${scheme}proxy.test:99999x" is not a URL`,
          );
        // In the environment a value with a scheme that does not parse is tried again as
        // host:port (Go's parseProxy), so only the bare form comes back as an error.
        if (scheme === '') {
          assert.throws(
            () => parseEnvironmentProxy(value, 'HTTPS_PROXY'),
            (err: Error) => err.message === 'HTTPS_PROXY: "proxy.test:99999x" is not a proxy URL',
          );
        }
      }),
    );
  });

  it('redacts a password with "@" in any URL of a log line, up to the last "@" of the authority', () => {
    assert.equal(
      redact('proxy http://u:p@ss@w0rd@proxy.test:3128/x refused'),
      'proxy http://u:[REDACTED]@proxy.test:3128/x refused',
    );
    assert.equal(
      redact('{"proxy":"http://u:p@ss@proxy.test:3128","owner":"a@b"}'),
      '{"proxy":"http://u:[REDACTED]@proxy.test:3128","owner":"a@b"}',
    );
  });

  it("checks a kubeconfig's proxy-url as client-go does: http, https or socks5", () => {
    assert.ok(parseKubeconfigProxy('socks5://p:1080') instanceof URL);
    assert.ok(parseKubeconfigProxy('https://p:443') instanceof URL);
    assert.match(
      String(parseKubeconfigProxy('socks5h://p:1080')),
      /scheme "socks5h" is not http, https or socks5/,
    );
    assert.match(String(parseKubeconfigProxy('proxy.corp:3128')), /scheme "proxy.corp"/);
    assert.match(String(parseKubeconfigProxy('not a url')), /is not a URL/);
  });

  it("a kubeconfig's proxy-url wins over the environment and applies to loopback too", () => {
    const env = { HTTPS_PROXY: 'http://env:1', NO_PROXY: '*' };
    const choice = chooseProxy(new URL('https://127.0.0.1:6443'), 'http://kc:2', env);
    assert.deepEqual([choice?.url.host, choice?.source], ['kc:2', 'kubeconfig proxy-url']);
    assert.equal(chooseProxy(new URL('https://127.0.0.1:6443'), undefined, env), undefined);
  });
});

describe('splitHostPort (Go net.SplitHostPort)', () => {
  it('splits like Go and refuses what Go refuses', () => {
    assert.deepEqual(splitHostPort('a.example:80'), { host: 'a.example', port: '80' });
    assert.deepEqual(splitHostPort('[::1]:80'), { host: '::1', port: '80' });
    assert.deepEqual(splitHostPort(':80'), { host: '', port: '80' });
    assert.equal(splitHostPort('a.example'), undefined);
    assert.equal(splitHostPort('::1'), undefined);
    assert.equal(splitHostPort('[::1]'), undefined);
    assert.equal(splitHostPort('[::1]x:80'), undefined);
  });
});
