// The driver's config: its shape and defaults (driver-config.ts), reading it from
// flags (from-flags.ts), its checks (checks.ts) and how problems are
// reported (problems.ts).
export * from './driver-config.js';
export { configFromFlags } from './from-flags.js';
export { configProblems, configWarnings, identityProblems } from './checks.js';
export { ConfigError, type ConfigProblem } from './problems.js';
