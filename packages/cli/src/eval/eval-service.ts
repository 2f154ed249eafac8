// The evaluation service of the `agentrt eval` subcommands: the runtime's reading of the judge and
// collector settings (so the CLI judges as Evaluate does), plus `--evaluator` files as custom
// evaluators, every id checked before anything runs.
import { resolve } from 'node:path';
import {
  type EvaluationService,
  type EvaluatorSpec,
  createEvaluationService,
  customEvaluatorFromPath,
  resolveRuntimeConfig,
} from '@agentrt/runtime';
import { type CliIO, UsageError } from '../command.js';

export function numberFlag(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a number from ${min} to ${max}`);
  return n;
}

const isPath = (e: string): boolean => /[\\/]|\.(m?js|cjs|md)$/.test(e);

/** `--evaluator` values that name files: custom evaluators, by the value given. */
function customEvaluatorFiles(
  values: readonly string[],
  cwd: string,
  timeoutMs?: number,
): Map<string, EvaluatorSpec> {
  const out = new Map<string, EvaluatorSpec>();
  for (const value of values.filter(isPath)) {
    let spec: EvaluatorSpec;
    try {
      spec = customEvaluatorFromPath(resolve(cwd, value));
    } catch (error) {
      throw new UsageError((error as Error).message, { cause: error });
    }
    out.set(value, spec.kind === 'module' && timeoutMs ? { ...spec, timeoutMs } : spec);
  }
  return out;
}

function checkEvaluators(service: EvaluationService, ids: readonly string[]): void {
  if (ids.length === 0) throw new UsageError('give at least one --evaluator');
  for (const id of ids) {
    try {
      service.evaluator(id);
    } catch {
      throw new UsageError(`unknown evaluator ${JSON.stringify(id)}; \`agentrt eval list\` names them`);
    }
  }
}

/** The service and the evaluator ids the `--evaluator` values name (files become custom evaluators). */
export function evaluationFor(
  base: string,
  io: CliIO,
  values: readonly string[],
  moduleTimeoutMs?: number,
): { service: EvaluationService; evaluators: string[] } {
  const config = resolveRuntimeConfig({ otlpEndpoint: base }, { ...io.env, AGENTRT_COLLECTOR_URL: base });
  const collector = { url: base, ...config.evaluation.collector, ingestHeaders: config.otlpHeaders };
  const custom = customEvaluatorFiles(values, io.cwd, moduleTimeoutMs);
  const service = createEvaluationService({
    ...config.evaluation,
    collector,
    customEvaluators: [...custom.values()],
  });
  const evaluators = values.map((e) => custom.get(e)?.id ?? e);
  checkEvaluators(service, evaluators);
  return { service, evaluators };
}
