import {
  type Context,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
} from '@opentelemetry/api';
import { CLOUD_SESSION_ID_HEADER, SESSION_ID_BAGGAGE_KEY } from './headers.js';
import { isValidSessionId, readSessionId } from './session-id.js';

/** Options of {@link SessionHeaderPropagator}. */
export interface SessionHeaderPropagatorOptions {
  /**
   * Header names `inject` writes the baggage `session.id` into. Default: none, because the W3C
   * baggage header already carries it. Set e.g. `['x-cloud-agent-runtime-session-id']` when calling
   * a service that reads only the header.
   */
  injectHeaders?: readonly string[];
}

/**
 * Bridges the runtime session header into W3C baggage: `extract` puts the id from
 * `X-Cloud-Agent-Runtime-Session-Id` (or `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`) into the
 * context's baggage as `session.id`, unless the incoming baggage already has a `session.id` (an
 * explicit baggage entry is the caller's deliberate choice). Invalid ids are ignored.
 */
export class SessionHeaderPropagator implements TextMapPropagator {
  readonly #injectHeaders: readonly string[];

  constructor(options: SessionHeaderPropagatorOptions = {}) {
    this.#injectHeaders = options.injectHeaders ?? [];
  }

  inject(context: Context, carrier: unknown, setter: TextMapSetter = defaultTextMapSetter): void {
    if (this.#injectHeaders.length === 0) return;
    const sessionId = propagation.getBaggage(context)?.getEntry(SESSION_ID_BAGGAGE_KEY)?.value;
    if (!isValidSessionId(sessionId)) return;
    for (const name of this.#injectHeaders) setter.set(carrier, name, sessionId);
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter = defaultTextMapGetter): Context {
    const baggage = propagation.getBaggage(context);
    if (baggage?.getEntry(SESSION_ID_BAGGAGE_KEY)) return context;
    const sessionId = readSessionId(carrier, getter);
    if (sessionId === undefined) return context;
    const entry = { value: sessionId };
    // One Map copy instead of two when there is no incoming baggage (the common case): this runs on
    // every request of a server.
    const next = baggage
      ? baggage.setEntry(SESSION_ID_BAGGAGE_KEY, entry)
      : propagation.createBaggage({ [SESSION_ID_BAGGAGE_KEY]: entry });
    return propagation.setBaggage(context, next);
  }

  fields(): string[] {
    return this.#injectHeaders.length > 0 ? [...this.#injectHeaders] : [CLOUD_SESSION_ID_HEADER];
  }
}
