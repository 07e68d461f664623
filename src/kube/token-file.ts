// A bearer token kept in a file (a kubeconfig user's token-file, the pod's projected
// service-account token), read again as soon as the file changed. client-go re-reads such a
// file once a minute and client-node's tokenFile provider likewise; kubelet replaces a
// projected token by swapping a symlink, so a stat per request sees a rotation at once and
// costs microseconds.
import fs from 'node:fs/promises';
import type { User } from '@kubernetes/client-node';
import { registerSecret } from '../log/redact.js';

/** The token file a user authenticates with (client-node keeps it as a tokenFile auth provider). */
export function tokenFileOf(user: User | null | undefined): string | undefined {
  const provider = user?.authProvider as { config?: { tokenFile?: unknown } } | undefined;
  const config = provider?.config;
  return typeof config?.tokenFile === 'string' && config.tokenFile !== '' ? config.tokenFile : undefined;
}

export class TokenFile {
  private token: string | undefined;
  private version = '';

  constructor(readonly path: string) {}

  /** The current token; read again when the file's identity, size or time changed. */
  async read(): Promise<string> {
    let version: string;
    try {
      const stat = await fs.stat(this.path);
      version = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (err) {
      throw new Error(`token file ${this.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
        cause: err,
      });
    }
    if (this.token === undefined || version !== this.version) {
      // client-go trims the file's content (a trailing newline is not part of the token).
      const token = (await fs.readFile(this.path, 'utf8')).trim();
      if (token === '') throw new Error(`token file ${this.path} is empty`);
      registerSecret(token);
      this.token = token;
      this.version = version;
    }
    return this.token;
  }
}
