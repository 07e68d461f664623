export * from './client.js';
export * from './errors.js';
export * from './resources.js';
export * from './wait.js';
export type { WatchEvent, WatchOptions } from './watch.js';
export type { WatchBackoffPolicy } from './watch-backoff.js';
export { describeCredential, describeToken } from './credential.js';
export * from './informer.js';
export * from './work-queue.js';
