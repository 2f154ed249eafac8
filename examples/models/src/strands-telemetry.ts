/**
 * Strands' own span bookkeeping, made to skip its work when the span is not recording.
 *
 * Strands 1.19's Tracer builds a span's attributes and events whether or not anything records
 * them: every model call serializes the whole conversation into message events (`JSON.stringify`
 * of every message, with a replacer), every tool call serializes the tool's result, every span end
 * formats an ISO date. With no SDK, or with its spans suppressed as {@link traceAgentRun} does (this
 * package emits the convention's spans itself), all of it lands on non-recording spans and is
 * thrown away: about a tenth of the reference agent's CPU per request, instrumented or not
 * (bench/instrument). The methods below only decorate a span; on a span that is not recording they
 * now return at once. A recording span (Strands' tracing used on its own) is decorated exactly as
 * before. Upstream-worthy: Strands could check `span.isRecording()` itself.
 */
import type { Agent } from '@strands-agents/sdk';

/** Methods that only add events or attributes to their first argument, a span. */
const DECORATORS = [
  '_addEvent',
  '_addEventMessages',
  '_addOutputEvent',
  '_addResponseEvent',
  '_addSystemPromptEvent',
] as const;

interface MaybeSpan {
  isRecording(): boolean;
  end(): void;
}
type Method = (this: unknown, span: MaybeSpan | null | undefined, ...rest: unknown[]) => unknown;
type TracerPrototype = Record<string | symbol, unknown>;

const PATCHED = Symbol.for('agentrt.strands-tracer.skip-unrecorded');
const unrecorded = (span: MaybeSpan | null | undefined): span is MaybeSpan =>
  span !== null && span !== undefined && !span.isRecording();

/** Every method this patch needs, or undefined when this Strands version does not have them all. */
function methodsOf(proto: TracerPrototype): Record<string, Method> | undefined {
  const names = [...DECORATORS, '_endSpan', 'endToolCallSpan'];
  const methods: Record<string, Method> = {};
  for (const name of names) {
    const method = proto[name];
    if (typeof method !== 'function') return undefined;
    methods[name] = method as Method;
  }
  return methods;
}

/**
 * Makes the Strands Tracer class behind `agent` skip attribute and event work for spans that are
 * not recording (once per process; later calls are no-ops). Returns whether the class is patched:
 * false when this Strands version lacks the methods (then nothing changes).
 */
export function skipUnrecordedStrandsSpanWork(agent: Agent): boolean {
  const tracer = (agent as unknown as { _tracer?: object })._tracer;
  if (tracer === undefined) return false;
  const proto = Object.getPrototypeOf(tracer) as TracerPrototype;
  if (proto[PATCHED] === true) return true;
  const methods = methodsOf(proto);
  if (methods === undefined) return false;
  for (const name of DECORATORS) {
    const original = methods[name]!;
    proto[name] = function (this: unknown, span: MaybeSpan | null | undefined, ...rest: unknown[]) {
      return unrecorded(span) ? undefined : original.call(this, span, ...rest);
    };
  }
  const endSpan = methods['_endSpan']!;
  proto['_endSpan'] = function (this: unknown, span: MaybeSpan | null | undefined, ...rest: unknown[]) {
    if (unrecorded(span)) return span.end(); // no end-time attribute, status or exception to build
    return endSpan.call(this, span, ...rest);
  };
  // It serializes the tool's result before it reaches _addEvent; given no span it only closes its
  // local trace (which it does first either way) and returns.
  const endToolCallSpan = methods['endToolCallSpan']!;
  proto['endToolCallSpan'] = function (
    this: unknown,
    span: MaybeSpan | null | undefined,
    ...rest: unknown[]
  ) {
    return endToolCallSpan.call(this, unrecorded(span) ? null : span, ...rest);
  };
  proto[PATCHED] = true;
  return true;
}
