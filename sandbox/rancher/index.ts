export * from './cluster.js';
export * from './credentials.js';
export * from './resources.js';
export * from './token-hash.js';
export * from './tokens.js';
