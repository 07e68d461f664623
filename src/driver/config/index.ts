// The driver's config: its shape and defaults (config/driver-config.ts), reading it from
// flags (config/from-flags.ts), its checks (config/checks.ts) and how problems are
// reported (config/problems.ts).
export * from './config/driver-config.js';
export { configFromFlags } from './config/from-flags.js';
export { configProblems, configWarnings, identityProblems } from './config/checks.js';
export { ConfigError, type ConfigProblem } from './config/problems.js';
