// Checks of the selectors an operator may put on the credential watch, before anything is
// listed: the apiserver answers a bad selector with 400 on every list, and an informer that
// cannot list never syncs, so the controller would decide nothing and hold every gate.
// The grammar is Kubernetes' (apimachinery's labels and fields packages), checked here only
// as far as the server would refuse it.

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `"${key}": the prefix before "/" is not a DNS subdomain`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name))
    return `"${key}" is not a label key (at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends)`;
  return undefined;
}

function labelValueProblem(value: string): string | undefined {
  if (value === '' || (value.length <= 63 && NAME.test(value))) return undefined;
  return `"${value}" is not a label value (at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends)`;
}

/** Splits on commas outside parentheses ("a in (x,y),b" → two requirements). */
function requirements(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  out.push(current.trim());
  return out;
}

/** What is wrong with a label selector, or undefined when the apiserver would take it. */
export function labelSelectorProblem(selector: string): string | undefined {
  for (const req of requirements(selector)) {
    if (req === '') return 'has an empty requirement (two commas, or one at an end)';
    const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(req);
    if (set) {
      const values = (set[3] ?? '').split(',').map((v) => v.trim());
      const bad = labelKeyProblem(set[1] ?? '') ?? values.map(labelValueProblem).find(Boolean);
      if (bad) return bad;
      continue;
    }
    const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(req);
    if (equality) {
      const bad = labelKeyProblem(equality[1] ?? '') ?? labelValueProblem(equality[3] ?? '');
      if (bad) return bad;
      continue;
    }
    const exists = /^(!?)([^=!\s()]+)$/.exec(req);
    if (exists) {
      const bad = labelKeyProblem(exists[2] ?? '');
      if (bad) return bad;
      continue;
    }
    return `"${req}" is not a requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`;
  }
  return undefined;
}

/** The fields the apiserver lets a Secret list select on. */
export const SECRET_SELECTABLE_FIELDS = ['metadata.name', 'metadata.namespace', 'type'] as const;

/** What is wrong with a field selector on Secrets, or undefined when the apiserver would take it. */
export function secretFieldSelectorProblem(selector: string): string | undefined {
  for (const req of selector.split(',').map((r) => r.trim())) {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(req);
    if (!m) return `"${req}" is not a requirement (field=value, field!=value)`;
    if (!(SECRET_SELECTABLE_FIELDS as readonly string[]).includes(m[1] ?? ''))
      return `"${m[1] ?? ''}" cannot select Secrets (only ${SECRET_SELECTABLE_FIELDS.join(', ')})`;
  }
  return undefined;
}
