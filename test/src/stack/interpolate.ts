import { parse as parseYaml } from 'yaml';

type Env = Readonly<Record<string, string | undefined>>;

/** Index of the `}` that closes the `${` whose body starts at `start`, honouring nested `${...}`. */
function closingBrace(text: string, start: number): number {
  let depth = 1;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '$' && text[i + 1] === '{') {
      depth++;
      i++;
    } else if (text[i] === '}' && --depth === 0) {
      return i;
    }
  }
  throw new Error(`unterminated \${ in ${JSON.stringify(text)}`);
}

/**
 * Variable interpolation as the Compose Specification defines it for docker-compose.yml values:
 * `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:+replacement}`, `${VAR+replacement}`,
 * `${VAR:?error}`, `${VAR?error}` and `$$` for a literal `$`. Defaults and replacements may nest.
 */
export function interpolateCompose(text: string, env: Env): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '$') {
      out += c;
      continue;
    }
    const next = text[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '{') {
      const end = closingBrace(text, i + 2);
      out += expandCompose(text.slice(i + 2, end), env);
      i = end;
    } else {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1))?.[0];
      if (!name) throw new Error(`invalid interpolation at ${i} in ${JSON.stringify(text)}`);
      out += env[name] ?? '';
      i += name.length;
    }
  }
  return out;
}

function expandCompose(body: string, env: Env): string {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+?])([\s\S]*))?$/.exec(body);
  if (!match) throw new Error(`invalid interpolation \${${body}}`);
  const [, name = '', op, operand = ''] = match;
  const value = env[name];
  const set = value !== undefined;
  const setNonEmpty = set && value !== '';
  switch (op) {
    case undefined:
      return value ?? '';
    case ':-':
      return setNonEmpty ? value : interpolateCompose(operand, env);
    case '-':
      return set ? value : interpolateCompose(operand, env);
    case ':+':
      return setNonEmpty ? interpolateCompose(operand, env) : '';
    case '+':
      return set ? interpolateCompose(operand, env) : '';
    case ':?':
    case '?':
      if (op === ':?' ? setNonEmpty : set) return value ?? '';
      throw new Error(`required variable ${name} is missing: ${operand}`);
    default:
      throw new Error(`unknown operator ${op}`);
  }
}

/** Applies `fn` to every string in a parsed YAML document (keys stay as they are). */
export function mapStrings(value: unknown, fn: (text: string) => unknown): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, fn));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, fn)]));
  }
  return value;
}

const OTEL_REFERENCE = /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * The OpenTelemetry Collector's config expansion for `${env:NAME}` and `${env:NAME:-default}`: a value
 * that is exactly one reference takes the YAML type of what it expands to (so a variable can hold a
 * list such as `[otlphttp/agentrt, otlphttp/xray]`); a reference inside longer text is substituted as text.
 */
export function expandOtelValue(text: string, env: Env): unknown {
  const replace = (_: string, name: string, fallback: string | undefined): string => {
    const value = env[name];
    return value !== undefined && value !== '' ? value : (fallback ?? '');
  };
  const whole = new RegExp(`^${OTEL_REFERENCE.source}$`).exec(text);
  if (whole) return parseYaml(replace(whole[0], whole[1] ?? '', whole[2]));
  return text.replace(OTEL_REFERENCE, replace).replaceAll('$$', '$');
}
