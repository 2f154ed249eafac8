import type { SamplerName } from '../config.js';

/**
 * The sampler named by `OTEL_TRACES_SAMPLER`, as one function of the trace id and the parent's
 * sampled flag (undefined: no valid parent): true records and samples, false drops. Same decisions
 * as the SDK's samplers (parentbased_*: a parent's flag decides; traceidratio: the same hash).
 */
export type LeanSampler = (traceId: string, parentSampled: boolean | undefined) => boolean;

export function createLeanSampler(name: SamplerName, ratio: number): LeanSampler {
  const root = rootSampler(name, ratio);
  if (!name.startsWith('parentbased_')) return (traceId) => root(traceId);
  return (traceId, parentSampled) => parentSampled ?? root(traceId);
}

function rootSampler(name: SamplerName, ratio: number): (traceId: string) => boolean {
  switch (name) {
    case 'always_on':
    case 'parentbased_always_on':
      return () => true;
    case 'always_off':
    case 'parentbased_always_off':
      return () => false;
    case 'traceidratio':
    case 'parentbased_traceidratio': {
      const r = Math.min(1, Math.max(0, ratio));
      const upperBound = r === 1 ? 0x100000000 : Math.floor(r * 0xffffffff);
      return (traceId) => accumulate(traceId) < upperBound;
    }
  }
}

/** The SDK's TraceIdRatioBasedSampler hash: the trace id's four 32-bit words XORed. */
function accumulate(traceId: string): number {
  let accumulation = 0;
  for (let i = 0; i < 32; i += 8) {
    accumulation = (accumulation ^ parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
  }
  return accumulation;
}
