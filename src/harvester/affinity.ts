// --harvester-vm-affinity as the Go driver reads it: json.Unmarshal into a core/v1
// Affinity (keys match fields case-insensitively, unknown keys are dropped, a wrong type is
// an error, `null` is no affinity and so the builder's default), then the rules of the
// Kubernetes pod validation that the VM's virt-launcher pod must pass: an affinity that
// breaks them gives a VM whose instance never gets a pod, with the Go driver as with us.
import { jsonProblem } from '../common/parse-problems.js';
import { goField, isJsonObject } from './config/go-json-decode.js';
import type { Affinity } from './types.js';

type Schema = 'string' | 'int32' | { list: Schema } | 'stringMap' | { fields: Record<string, Schema> };

const requirement: Schema = { fields: { key: 'string', operator: 'string', values: { list: 'string' } } };
const labelSelector: Schema = {
  fields: { matchLabels: 'stringMap', matchExpressions: { list: requirement } },
};
const nodeSelectorTerm: Schema = {
  fields: { matchExpressions: { list: requirement }, matchFields: { list: requirement } },
};
const podAffinityTerm: Schema = {
  fields: {
    labelSelector,
    namespaces: { list: 'string' },
    topologyKey: 'string',
    namespaceSelector: labelSelector,
    matchLabelKeys: { list: 'string' },
    mismatchLabelKeys: { list: 'string' },
  },
};
const podRules: Schema = {
  fields: {
    requiredDuringSchedulingIgnoredDuringExecution: { list: podAffinityTerm },
    preferredDuringSchedulingIgnoredDuringExecution: {
      list: { fields: { weight: 'int32', podAffinityTerm } },
    },
  },
};
const AFFINITY: Schema = {
  fields: {
    nodeAffinity: {
      fields: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          fields: { nodeSelectorTerms: { list: nodeSelectorTerm } },
        },
        preferredDuringSchedulingIgnoredDuringExecution: {
          list: { fields: { weight: 'int32', preference: nodeSelectorTerm } },
        },
      },
    },
    podAffinity: podRules,
    podAntiAffinity: podRules,
  },
};

const INT32_MAX = 2 ** 31 - 1;

/** The value in Go's field names, null fields left out (Go's omitempty pointers and slices). */
function decode(value: unknown, schema: Schema, at: string, problems: string[]): unknown {
  if (value === null || value === undefined) return undefined;
  if (schema === 'string') {
    if (typeof value === 'string') return value;
    problems.push(`${at} must be a string`);
  } else if (schema === 'int32') {
    if (typeof value === 'number' && Number.isInteger(value) && Math.abs(value) <= INT32_MAX) return value;
    problems.push(`${at} must be a whole number`);
  } else if (schema === 'stringMap') {
    if (isJsonObject(value)) {
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(value)) {
        if (typeof v === 'string') out[k] = v;
        else if (v !== null) problems.push(`${at}.${k} must be a string`);
      }
      return out;
    }
    problems.push(`${at} must be an object of strings`);
  } else if ('list' in schema) {
    if (Array.isArray(value))
      return value.map((v, i) => decode(v, schema.list, `${at}[${i}]`, problems) ?? zero(schema.list));
    problems.push(`${at} must be a list`);
  } else {
    if (isJsonObject(value)) {
      const out: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(schema.fields)) {
        const v = decode(goField(value, name), sub, at === '' ? name : `${at}.${name}`, problems);
        if (v !== undefined) out[name] = v;
      }
      return out;
    }
    problems.push(`${at || 'the affinity'} must be an object`);
  }
  return undefined;
}

/** Go's zero value for a null list element. */
function zero(schema: Schema): unknown {
  return schema === 'string'
    ? ''
    : schema === 'int32'
      ? 0
      : schema === 'stringMap' || !('list' in schema)
        ? {}
        : [];
}

interface Requirement {
  key?: string;
  operator?: string;
  values?: string[];
}

const LABEL_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const NODE_OPERATORS = [...LABEL_OPERATORS, 'Gt', 'Lt'];

function checkRequirements(
  list: Requirement[] | undefined,
  at: string,
  operators: string[],
  problems: string[],
): void {
  list?.forEach((r, i) => {
    const where = `${at}[${i}]`;
    if (!r.key) problems.push(`${where}.key is required`);
    if (!operators.includes(r.operator ?? '')) {
      problems.push(`${where}.operator "${r.operator ?? ''}" is not one of ${operators.join(', ')}`);
    } else if ((r.operator === 'In' || r.operator === 'NotIn') && !(r.values ?? []).length) {
      problems.push(`${where}.values must not be empty with operator ${r.operator}`);
    } else if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && (r.values ?? []).length) {
      problems.push(`${where}.values must be empty with operator ${r.operator}`);
    }
  });
}

interface Term {
  labelSelector?: { matchExpressions?: Requirement[] };
  namespaceSelector?: { matchExpressions?: Requirement[] };
  topologyKey?: string;
}

function checkTerm(term: Term, at: string, problems: string[]): void {
  if (!term.topologyKey) problems.push(`${at}.topologyKey is required (e.g. kubernetes.io/hostname)`);
  checkRequirements(
    term.labelSelector?.matchExpressions,
    `${at}.labelSelector.matchExpressions`,
    LABEL_OPERATORS,
    problems,
  );
  checkRequirements(
    term.namespaceSelector?.matchExpressions,
    `${at}.namespaceSelector.matchExpressions`,
    LABEL_OPERATORS,
    problems,
  );
}

function checkWeight(weight: number | undefined, at: string, problems: string[]): void {
  if (weight === undefined || weight < 1 || weight > 100)
    problems.push(`${at}.weight must be between 1 and 100 (got ${weight ?? 'none'})`);
}

/** Pod validation's affinity rules (k8s.io/kubernetes pkg/apis/core/validation). */
function podValidationProblems(a: Affinity): string[] {
  const problems: string[] = [];
  const node = a.nodeAffinity as
    | {
        requiredDuringSchedulingIgnoredDuringExecution?: {
          nodeSelectorTerms?: Array<Record<string, Requirement[]>>;
        };
        preferredDuringSchedulingIgnoredDuringExecution?: Array<{
          weight?: number;
          preference?: Record<string, Requirement[]>;
        }>;
      }
    | undefined;
  const required = node?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required && !(required.nodeSelectorTerms ?? []).length) {
    problems.push(
      'nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms must not be empty',
    );
  }
  required?.nodeSelectorTerms?.forEach((t, i) => {
    const at = `nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[${i}]`;
    checkRequirements(t['matchExpressions'], `${at}.matchExpressions`, NODE_OPERATORS, problems);
    checkRequirements(t['matchFields'], `${at}.matchFields`, ['In', 'NotIn'], problems);
  });
  node?.preferredDuringSchedulingIgnoredDuringExecution?.forEach((p, i) => {
    const at = `nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    checkWeight(p.weight, at, problems);
    checkRequirements(
      p.preference?.['matchExpressions'],
      `${at}.preference.matchExpressions`,
      NODE_OPERATORS,
      problems,
    );
    checkRequirements(
      p.preference?.['matchFields'],
      `${at}.preference.matchFields`,
      ['In', 'NotIn'],
      problems,
    );
  });
  for (const kind of ['podAffinity', 'podAntiAffinity'] as const) {
    const rules = a[kind] as
      | {
          requiredDuringSchedulingIgnoredDuringExecution?: Term[];
          preferredDuringSchedulingIgnoredDuringExecution?: Array<{
            weight?: number;
            podAffinityTerm?: Term;
          }>;
        }
      | undefined;
    rules?.requiredDuringSchedulingIgnoredDuringExecution?.forEach((t, i) =>
      checkTerm(t, `${kind}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`, problems),
    );
    rules?.preferredDuringSchedulingIgnoredDuringExecution?.forEach((w, i) => {
      const at = `${kind}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
      checkWeight(w.weight, at, problems);
      checkTerm(w.podAffinityTerm ?? {}, `${at}.podAffinityTerm`, problems);
    });
  }
  return problems;
}

export interface ParsedAffinity {
  /** The affinity in Go's field names; null for `null` (the builder's default then applies). */
  value?: Affinity | null;
  problems: string[];
}

/** Reads the (already base64-decoded) flag value. */
export function parseAffinity(text: string): ParsedAffinity {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return {
      problems: [
        `${jsonProblem(err)} (expected a Kubernetes affinity like {"podAntiAffinity":{…}}, plain or base64)`,
      ],
    };
  }
  if (raw === null) return { value: null, problems: [] };
  if (!isJsonObject(raw)) return { problems: ['must be a JSON object like {"podAntiAffinity":{…}}'] };
  const problems: string[] = [];
  const value = decode(raw, AFFINITY, '', problems) as Affinity;
  if (problems.length > 0) return { problems };
  const invalid = podValidationProblems(value);
  if (invalid.length > 0) {
    return {
      problems: invalid.map(
        (p) =>
          `${p}: Kubernetes would refuse the VM's virt-launcher pod, so the VM would never start (with the Go driver neither)`,
      ),
    };
  }
  return { value, problems: [] };
}
