/** Small shared pieces: badges, token pills, empty / error / loading states, JSON. */
import type { ComponentChildren, JSX } from 'preact';
import type { GenAiKind } from '../../../src/trace-model/index.js';
import { type Price, costOfUsage, formatUsd } from '../../../src/cost/prices.js';
import { formatCount } from '../format.js';
import type { TokenTotals } from '../view-types.js';

const KIND_LABEL: Record<GenAiKind, string> = {
  invoke_agent: 'agent',
  chat: 'model',
  execute_tool: 'tool',
  other: '',
};

export function KindBadge({ kind }: { kind: GenAiKind }) {
  if (kind === 'other') return null;
  return (
    <span class={`badge kind-${kind}`} title={kind}>
      {KIND_LABEL[kind]}
    </span>
  );
}

export function Tokens({ tokens, compact }: { tokens: TokenTotals | undefined; compact?: boolean }) {
  if (!tokens || tokens.total === 0) return <span class="muted">–</span>;
  const title = `${tokens.input} input + ${tokens.output} output = ${tokens.total} tokens`;
  return (
    <span class="tokens" title={title}>
      {compact ? (
        `${formatCount(tokens.total)} tok`
      ) : (
        <>
          <span class="tok-in">↑{formatCount(tokens.input)}</span>{' '}
          <span class="tok-out">↓{formatCount(tokens.output)}</span>
        </>
      )}
    </span>
  );
}

/**
 * The cost of usage per model (tokens × the collector's price table). "—" without usage or prices;
 * models without a price are named in the tooltip and marked with "+".
 */
export function Cost({
  byModel,
  prices,
}: {
  byModel: Record<string, TokenTotals> | undefined;
  prices: Record<string, Price> | undefined;
}) {
  const cost = prices && costOfUsage(byModel, prices);
  if (!cost) return <span class="muted">–</span>;
  const priced = cost.unpriced.length < Object.keys(byModel ?? {}).length;
  const unpriced = cost.unpriced.map((m) => m || '(model not named)').join(', ');
  const title = [
    cost.unpriced.length
      ? `list price of the priced models; no price for ${unpriced}`
      : 'tokens × list price per model',
    ...cost.notes,
  ].join('\n');
  return (
    <span class="cost" data-testid="cost" title={title}>
      {priced ? formatUsd(cost.usd) : '—'}
      {priced && cost.unpriced.length > 0 && <span class="muted">+</span>}
      {priced && cost.notes.length > 0 && <span class="muted">*</span>}
    </span>
  );
}

export function StatusPill({ errors, inProgress }: { errors: number; inProgress?: boolean }) {
  if (inProgress) return <span class="pill pill-live">in progress</span>;
  if (errors > 0)
    return (
      <span class="pill pill-error">
        {errors} error{errors === 1 ? '' : 's'}
      </span>
    );
  return <span class="pill pill-ok">ok</span>;
}

export function Loading({ what }: { what: string }) {
  return (
    <div class="state loading" role="status">
      <span class="spinner" /> Loading {what}…
    </div>
  );
}

export function ErrorBox({ error, retry }: { error: Error; retry?: () => void }) {
  return (
    <div class="state error-box" role="alert">
      <strong>Could not load.</strong> {error.message}
      {retry && (
        <button class="btn" onClick={retry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** What a newcomer needs to get data into the collector, with this page's own address. */
export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }) {
  const endpoint = typeof location === 'undefined' ? 'http://127.0.0.1:4318' : location.origin;
  return (
    <div class="empty">
      <h2>{title}</h2>
      {children}
      <p>Send telemetry from any Node.js app — the launcher instruments it without code changes:</p>
      <pre class="code">
        <span class="c-comment">
          # in an agentrt checkout (not on the npm registry yet): link the launcher into your agent
        </span>
        {'\n'}npm run build && npm install --prefix ~/my-agent "$PWD/packages/instrument"{'\n'}
        <span class="c-comment"># in your agent's folder (~/my-agent)</span>
        {'\n'}export OTEL_EXPORTER_OTLP_ENDPOINT={endpoint}
        {'\n'}node --require @agentrt/instrument app.js
      </pre>
      <p>
        Any OpenTelemetry SDK works too: point its OTLP/HTTP exporter at <code>{endpoint}</code> (
        <code>/v1/traces</code>, <code>/v1/logs</code>). Put a <code>session.id</code> attribute on spans to
        group a conversation into a session. New spans show up here without a reload.
      </p>
    </div>
  );
}

/** Pretty-printed JSON with light syntax colouring (strings, numbers, keys, literals). */
export function JsonView({ value }: { value: unknown }) {
  if (typeof value === 'string') return <pre class="json json-text">{value}</pre>;
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value); // Cyclic values cannot come from JSON, but be safe.
  }
  const parts: JSX.Element[] = [];
  const re = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  let m: RegExpExecArray | null;
  let i = 0;
  while ((m = re.exec(text))) {
    if (m.index > last) parts.push(<span key={i++}>{text.slice(last, m.index)}</span>);
    if (m[1]) {
      parts.push(
        <span key={i++} class={m[2] ? 'j-key' : 'j-str'}>
          {m[1]}
        </span>,
      );
      if (m[2]) parts.push(<span key={i++}>{m[2]}</span>);
    } else if (m[3])
      parts.push(
        <span key={i++} class="j-lit">
          {m[3]}
        </span>,
      );
    else
      parts.push(
        <span key={i++} class="j-num">
          {m[4]}
        </span>,
      );
    last = re.lastIndex;
  }
  if (last < text.length) parts.push(<span key={i}>{text.slice(last)}</span>);
  return <pre class="json">{parts}</pre>;
}

/** Attribute table; JSON-looking string values are shown formatted. */
export function AttributeTable({
  attributes,
  empty = 'No attributes.',
}: {
  attributes: Record<string, unknown>;
  empty?: string;
}) {
  const keys = Object.keys(attributes).sort();
  if (keys.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table class="kv">
      <tbody>
        {keys.map((k) => (
          <tr key={k}>
            <th>{k}</th>
            <td>
              <AttributeValueView value={attributes[k]} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AttributeValueView({ value }: { value: unknown }) {
  if (typeof value === 'string') {
    const t = value.trim();
    if ((t.startsWith('{') || t.startsWith('[')) && t.length > 2) {
      try {
        return <JsonView value={JSON.parse(t)} />;
      } catch {
        // Not JSON: fall through to plain text.
      }
    }
    return <span class="v-str">{value}</span>;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null)
    return <span class="v-lit">{String(value)}</span>;
  return <JsonView value={value} />;
}

export function Section({
  title,
  count,
  children,
  open = true,
}: {
  title: string;
  count?: number;
  children: ComponentChildren;
  open?: boolean;
}) {
  return (
    <details class="section" open={open}>
      <summary>
        {title}
        {count !== undefined && <span class="count">{count}</span>}
      </summary>
      <div class="section-body">{children}</div>
    </details>
  );
}
