export { startFrontProxy, type FrontProxy, type FrontProxyOptions } from './front-proxy.js';
export type { FaultControl, FaultSpec, RequestCount } from './faults.js';
