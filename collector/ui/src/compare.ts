/** Side-by-side comparison of two traces: time split, token deltas and step differences. */
import type { TokenTotals, TraceView } from './view-types.js';

export interface TraceFigures {
  durationMs: number;
  spanCount: number;
  errorCount: number;
  /** Summed durations of model calls (chat spans) and of tool calls. */
  modelMs: number;
  toolMs: number;
  modelCalls: number;
  toolCalls: number;
  tokens: TokenTotals;
}

export interface StepDiff {
  /** 'same' when both traces took the step (in the same order), else the side that has it. */
  change: 'same' | 'only-a' | 'only-b';
  label: string;
  aMs?: number;
  bMs?: number;
}

export interface TraceComparison {
  a: TraceFigures;
  b: TraceFigures;
  steps: StepDiff[];
}

export function traceFigures(trace: TraceView): TraceFigures {
  const f: TraceFigures = {
    durationMs: trace.endMs - trace.startMs,
    spanCount: trace.spans.length,
    errorCount: trace.spans.filter((s) => s.status === 'error').length,
    modelMs: 0,
    toolMs: 0,
    modelCalls: 0,
    toolCalls: 0,
    tokens: trace.tokens.total,
  };
  for (const s of trace.spans) {
    if (s.genai.kind === 'chat') {
      f.modelMs += s.durationMs;
      f.modelCalls++;
    } else if (s.genai.kind === 'execute_tool') {
      f.toolMs += s.durationMs;
      f.toolCalls++;
    }
  }
  return f;
}

interface Step {
  label: string;
  ms: number;
}

/** The agent steps of a trace (GenAI spans, else all spans) in start order. */
export function traceSteps(trace: TraceView): Step[] {
  const sorted = [...trace.spans].sort((x, y) => x.startTimeUnixNano - y.startTimeUnixNano);
  const genai = sorted.filter((s) => s.genai.kind !== 'other');
  return (genai.length > 0 ? genai : sorted).map((s) => ({ label: s.name, ms: s.durationMs }));
}

/** Longest-common-subsequence alignment of two step lists. */
export function diffSteps(a: Step[], b: Step[]): StepDiff[] {
  const n = a.length;
  const m = b.length;
  // Quadratic table; traces worth comparing by eye have at most a few thousand steps.
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] =
        a[i]!.label === b[j]!.label ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: StepDiff[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i]!.label === b[j]!.label) {
      out.push({ change: 'same', label: a[i]!.label, aMs: a[i]!.ms, bMs: b[j]!.ms });
      i++;
      j++;
    } else if (j < m && (i >= n || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) {
      out.push({ change: 'only-b', label: b[j]!.label, bMs: b[j]!.ms });
      j++;
    } else {
      out.push({ change: 'only-a', label: a[i]!.label, aMs: a[i]!.ms });
      i++;
    }
  }
  return out;
}

export function compareTraces(a: TraceView, b: TraceView): TraceComparison {
  return { a: traceFigures(a), b: traceFigures(b), steps: diffSteps(traceSteps(a), traceSteps(b)) };
}
