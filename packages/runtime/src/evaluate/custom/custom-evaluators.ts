/**
 * Custom evaluators, registered by name next to the built-ins: a JavaScript module (a function of
 * the session, run in a thread with a deadline) or an LLM prompt with its rubric (a Markdown file
 * with the built-in prompts' placeholders; the judge's answer format is appended). The runtime reads
 * them from AGENTRT_EVALUATORS_FILE, `agentrt eval run` from `--evaluator <file>` too.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { type EvaluationLevel, type EvaluatorSpec } from '../catalog.js';

export interface CustomEvaluatorConfig {
  /** The evaluator id (`[a-zA-Z][a-zA-Z0-9_-]*`); a built-in id cannot be reused. */
  name: string;
  /** A .js/.mjs module whose default export scores the session. */
  module?: string;
  /** A Markdown prompt with its rubric. */
  prompt?: string;
  /** A prompt's level (default TRACE); modules judge the session. */
  level?: EvaluationLevel;
  /** A module's deadline per session (default 10000). */
  timeoutMs?: number;
}

export class EvaluatorConfigError extends Error {
  override name = 'EvaluatorConfigError';
}

const NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,99}$/;
const LEVELS: readonly EvaluationLevel[] = ['SESSION', 'TRACE', 'TOOL_CALL'];
export const DEFAULT_MODULE_TIMEOUT_MS = 10_000;

export function customEvaluator(config: CustomEvaluatorConfig): EvaluatorSpec {
  const where = `custom evaluator ${JSON.stringify(config.name)}`;
  if (typeof config.name !== 'string' || !NAME.test(config.name) || config.name.startsWith('Builtin'))
    throw new EvaluatorConfigError(`${where}: name must match ${NAME.source} and not start with Builtin`);
  if (Boolean(config.module) === Boolean(config.prompt))
    throw new EvaluatorConfigError(`${where}: give exactly one of module or prompt`);
  if (config.module && !existsSync(config.module))
    throw new EvaluatorConfigError(`${where}: no module at ${config.module}`);
  if (config.module)
    return {
      id: config.name,
      level: 'SESSION',
      kind: 'module',
      path: resolve(config.module),
      timeoutMs: config.timeoutMs ?? DEFAULT_MODULE_TIMEOUT_MS,
      description: `module ${config.module}`,
    };
  const level = config.level ?? 'TRACE';
  if (!LEVELS.includes(level))
    throw new EvaluatorConfigError(`${where}: level must be one of ${LEVELS.join(', ')}`);
  let template: string;
  try {
    template = readFileSync(config.prompt!, 'utf8');
  } catch (error) {
    throw new EvaluatorConfigError(`${where}: cannot read ${config.prompt} (${(error as Error).message})`, {
      cause: error,
    });
  }
  return { id: config.name, level, kind: 'prompt', template, description: `prompt ${config.prompt}` };
}

/** `./checks/no-errors.mjs` → module `no-errors`; `./rubrics/tone.md` → prompt `tone` (TRACE). */
export function customEvaluatorFromPath(path: string): EvaluatorSpec {
  const ext = extname(path);
  const name = basename(path, ext);
  if (ext === '.md') return customEvaluator({ name, prompt: path });
  if (['.js', '.mjs', '.cjs'].includes(ext)) return customEvaluator({ name, module: path });
  throw new EvaluatorConfigError(`${path}: a custom evaluator is a .js/.mjs module or a .md prompt`);
}

/** AGENTRT_EVALUATORS_FILE: `{"evaluators": [CustomEvaluatorConfig…]}`, paths relative to the file. */
export function readEvaluatorsFile(path: string): EvaluatorSpec[] {
  let parsed: { evaluators?: CustomEvaluatorConfig[] };
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as typeof parsed;
  } catch (error) {
    throw new EvaluatorConfigError(`${path}: not a JSON evaluators file (${(error as Error).message})`, {
      cause: error,
    });
  }
  if (!Array.isArray(parsed.evaluators)) throw new EvaluatorConfigError(`${path}: evaluators must be a list`);
  const dir = dirname(path);
  return parsed.evaluators.map((c) =>
    customEvaluator({
      ...c,
      ...(c.module ? { module: resolve(dir, c.module) } : {}),
      ...(c.prompt ? { prompt: resolve(dir, c.prompt) } : {}),
    }),
  );
}
