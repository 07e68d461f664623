// Bounds that keep hostile or broken input from costing unbounded memory, time or stack.

export interface GobLimits {
  /**
   * Largest message (and largest value with its type definitions) we read or write.
   * Go allows 1 GiB. The largest message of this protocol is SetConfigRaw's JSON
   * (kubeconfig, cloud-init user and network data: tens of KiB, rarely 1 MiB), so
   * 10 MiB leaves ample room while capping what one connection can make us buffer.
   */
  maxMessageBytes: number;
  /** Deepest nesting of composite values (struct in slice in interface ...). The protocol needs 5. */
  maxDepth: number;
  /** Type definitions accepted per stream. The protocol defines fewer than 10. */
  maxTypeDefinitions: number;
  /** Bytes all type definitions of one stream may take (the protocol's take under 1 KiB). */
  maxDefinitionBytes: number;
  /** Longest interface concrete-type name; the same bound as Go's decoder. */
  maxTypeNameBytes: number;
}

export const DEFAULT_GOB_LIMITS: Readonly<GobLimits> = Object.freeze({
  maxMessageBytes: 10 * 1024 * 1024,
  maxDepth: 64,
  maxTypeDefinitions: 1024,
  maxDefinitionBytes: 1024 * 1024,
  maxTypeNameBytes: 1024,
});

export function resolveLimits(overrides: Partial<GobLimits> = {}): GobLimits {
  return { ...DEFAULT_GOB_LIMITS, ...overrides };
}
