import {
  type Context,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  defaultTextMapGetter,
  defaultTextMapSetter,
} from '@opentelemetry/api';
import { AWSXRayPropagator, AWSXRAY_TRACE_ID_HEADER } from '@opentelemetry/propagator-aws-xray';
import { headerValue } from './carrier.js';
import { AMZN_TRACE_ID_HEADER, CLOUD_TRACE_ID_HEADER, TRACE_ID_HEADERS } from './headers.js';

/** Options of {@link CloudXRayPropagator}. */
export interface CloudXRayPropagatorOptions {
  /**
   * Header names written by `inject`. Default: both `x-cloud-trace-id` and `x-amzn-trace-id`, so a
   * downstream service that knows either name continues the trace.
   */
  injectHeaders?: readonly string[];
}

/**
 * The X-Ray trace header (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0|1`) read from
 * `X-Cloud-Trace-Id` or, when that is absent or unusable, from the AWS name `X-Amzn-Trace-Id`.
 *
 * Parsing is delegated to the OpenTelemetry contrib `AWSXRayPropagator` (tolerant: whitespace around
 * parts, extra keys such as `Lineage`, any order), so a malformed header simply leaves the context
 * unchanged; nothing here throws.
 */
export class CloudXRayPropagator implements TextMapPropagator {
  readonly #xray = new AWSXRayPropagator();
  readonly #injectHeaders: readonly string[];

  constructor(options: CloudXRayPropagatorOptions = {}) {
    this.#injectHeaders = options.injectHeaders ?? TRACE_ID_HEADERS;
  }

  inject(context: Context, carrier: unknown, setter: TextMapSetter = defaultTextMapSetter): void {
    const names = this.#injectHeaders;
    this.#xray.inject(context, carrier, {
      set(target, _key, value) {
        for (const name of names) setter.set(target, name, value);
      },
    });
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter = defaultTextMapGetter): Context {
    for (const name of TRACE_ID_HEADERS) {
      const value = headerValue(carrier, name, getter);
      if (value === undefined) continue;
      const next = this.#xray.extract(context, { [AWSXRAY_TRACE_ID_HEADER]: value }, xrayGetter);
      // The contrib propagator returns the very same context when the header is unusable.
      if (next !== context) return next;
    }
    return context;
  }

  fields(): string[] {
    return [...new Set([...this.#injectHeaders, CLOUD_TRACE_ID_HEADER, AMZN_TRACE_ID_HEADER])];
  }
}

const xrayGetter: TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};
