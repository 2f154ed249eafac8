/**
 * A custom evaluator written as a JavaScript module: its default export (or `evaluate`) takes the
 * session as read from its spans and returns `{ value (0–1), label?, explanation? }`. Each call runs
 * in its own worker thread with a deadline: a module that throws, returns something else or never
 * returns gives a result with an errorCode, and the run goes on.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type SessionView } from '../session-spans.js';

export interface ModuleVerdict {
  value?: number;
  label?: string;
  explanation?: string;
  errorCode?: 'EvaluatorError' | 'EvaluatorTimeout';
  errorMessage?: string;
}

const here = (name: string): string => fileURLToPath(new URL(name, import.meta.url));
/** dist/ has the compiled worker; tests run from src/, where Node strips the worker's types. */
const WORKER = existsSync(here('./module-worker.js'))
  ? here('./module-worker.js')
  : here('./module-worker.ts');

function verdictOf(value: unknown): ModuleVerdict {
  const v = value as { value?: unknown; label?: unknown; explanation?: unknown } | null;
  if (!v || typeof v.value !== 'number' || !(v.value >= 0 && v.value <= 1))
    return {
      errorCode: 'EvaluatorError',
      errorMessage: `must return { value: 0..1 }; returned ${JSON.stringify(value)?.slice(0, 200)}`,
    };
  const out: ModuleVerdict = {
    value: v.value,
    label: typeof v.label === 'string' ? v.label : v.value >= 0.5 ? 'Pass' : 'Fail',
  };
  if (typeof v.explanation === 'string') out.explanation = v.explanation;
  return out;
}

/** How long a module may take to load (a thread start and an import; slow on a loaded machine). */
const LOAD_TIMEOUT_MS = 30_000;

type WorkerMessage = { loaded: true } | { ok: boolean; value?: unknown; message?: string };

/**
 * Runs the module on one session; never rejects. `timeoutMs` is the call's deadline, from the
 * moment the module is loaded: a thread start and an import on a busy machine do not count.
 */
export function runModuleEvaluator(
  modulePath: string,
  session: SessionView,
  timeoutMs: number,
): Promise<ModuleVerdict> {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER, {
      workerData: { modulePath: pathToFileURL(modulePath).href, session },
      stdout: true,
      stderr: true,
    });
    const finish = (verdict: ModuleVerdict): void => {
      clearTimeout(timer);
      worker.removeAllListeners();
      void worker.terminate();
      resolve(verdict);
    };
    const deadline = (ms: number, message: string) =>
      setTimeout(() => finish({ errorCode: 'EvaluatorTimeout', errorMessage: message }), ms);
    let timer = deadline(LOAD_TIMEOUT_MS, `the module did not load within ${LOAD_TIMEOUT_MS} ms`);
    worker.on('message', (m: WorkerMessage) => {
      if ('loaded' in m) {
        clearTimeout(timer);
        timer = deadline(timeoutMs, `no answer within ${timeoutMs} ms`);
        return;
      }
      finish(
        m.ok ? verdictOf(m.value) : { errorCode: 'EvaluatorError', errorMessage: m.message ?? 'failed' },
      );
    });
    worker.once('error', (error) => finish({ errorCode: 'EvaluatorError', errorMessage: error.message }));
    worker.once('exit', (code) =>
      finish({ errorCode: 'EvaluatorError', errorMessage: `the evaluator's thread exited (${code})` }),
    );
  });
}
