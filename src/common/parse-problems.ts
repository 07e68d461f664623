// Parser messages turned into short problem phrases. Both V8's JSON.parse and the YAML
// parsers quote the input they failed on, and that input can be a kubeconfig or user
// data with passwords in it, so only the reason is kept, never the quoted text. An
// unquoted secret is what YAML misreads most (a token beginning with "!" is a tag, "*" an
// alias, "|" a block scalar header): those reasons are ours, and say to quote the value.

/** "is not valid JSON (Unexpected token '}')": V8's reason without the quoted input. */
export function jsonProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const reason = message.split(/, "/)[0] ?? message;
  return `is not valid JSON (${reason})`;
}

/** Reasons for the codes whose messages carry source text (the `yaml` package's codes). */
const OWN_REASONS: Record<string, string> = {
  TAG_RESOLVE_FAILED: 'a value beginning with "!" is read as a YAML tag; quote the value',
  BAD_ALIAS: 'a value beginning with "*" or "&" is read as a YAML alias or anchor; quote the value',
  BAD_DQ_ESCAPE: 'a double-quoted value has an invalid escape sequence; use single quotes',
  BAD_SCALAR_START: 'a plain value cannot start with this character; quote the value',
  BAD_DIRECTIVE: 'a line beginning with "%" is read as a YAML directive',
  BAD_COLLECTION_TYPE: 'a tag does not fit its value; quote the value',
};

/**
 * The parser's reason without any text of the input: the first line, without its position,
 * cut before anything it quotes (": <source>", "\"…\"", js-yaml's "!<tag>").
 */
function scrubbed(message: string): string {
  const first = (message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?\s*$/, '');
  const cut = first.search(/: |:$|"|'|!<| \(\d+:\d+\)/);
  return (cut >= 0 ? first.slice(0, cut) : first).trim();
}

/** "is not valid YAML (line 3, column 1: …)": the reason (never the input's text), and where. */
export function yamlProblem(error: {
  code?: string;
  message: string;
  linePos?: ReadonlyArray<{ line: number; col: number }>;
}): string {
  const reason = (error.code !== undefined ? OWN_REASONS[error.code] : undefined) ?? scrubbed(error.message);
  const at = error.linePos?.[0];
  return `is not valid YAML (${at ? `line ${at.line}, column ${at.col}: ` : ''}${reason})`;
}
