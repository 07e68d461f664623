// Parser messages turned into short problem phrases. Both V8's JSON.parse and the YAML
// parser quote the input they failed on, and that input can be a kubeconfig or user
// data with passwords in it, so only the reason is kept, never the quoted text.

/** "is not valid JSON (Unexpected token '}')": V8's reason without the quoted input. */
export function jsonProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const reason = message.split(/, "/)[0] ?? message;
  return `is not valid JSON (${reason})`;
}

/** "is not valid YAML (line 3, column 1: …)": the first line of the parser's message, and where. */
export function yamlProblem(error: {
  message: string;
  linePos?: ReadonlyArray<{ line: number; col: number }>;
}): string {
  const reason = (error.message.split('\n')[0] ?? '')
    .replace(/:\s*$/, '')
    .replace(/ at line \d+, column \d+$/, '');
  const at = error.linePos?.[0];
  return `is not valid YAML (${at ? `line ${at.line}, column ${at.col}: ` : ''}${reason})`;
}
