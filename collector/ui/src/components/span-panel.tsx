/** Everything about one span: GenAI view, timing, attributes, events, links, resource, logs. */
import { extractChatMessages, tokensByModel, toolCallOf } from '../../../src/trace-model/index.js';
import { usePrices } from '../hooks.js';
import { formatClock, formatDuration } from '../format.js';
import { routeHref } from '../router.js';
import type { LogView, SpanView, TokenTotals, TraceView } from '../view-types.js';
import { findNode } from '../waterfall-model.js';
import { ChatMessages, ToolCallView } from './chat.js';
import { AttributeTable, AttributeValueView, Cost, KindBadge, Section, Tokens } from './common.js';

export function SpanPanel({
  span,
  trace,
  onClose,
}: {
  span: SpanView;
  trace: TraceView;
  onClose: () => void;
}) {
  return (
    <aside class="span-panel" aria-label="span details">
      <header class="panel-head">
        <div>
          <KindBadge kind={span.genai.kind} /> <h2 class="panel-title">{span.name}</h2>
          <div class="muted">
            {span.service} · {span.kind.toLowerCase()} · span <code>{span.spanId}</code>
          </div>
        </div>
        <button class="btn icon" title="Close (Esc)" aria-label="Close span details" onClick={onClose}>
          ✕
        </button>
      </header>
      <SpanFacts span={span} trace={trace} />
      <GenAiSections span={span} />
      <Section title="Attributes" count={Object.keys(span.attributes).length}>
        <AttributeTable attributes={span.attributes} />
      </Section>
      <EventsSection span={span} />
      <Section title="Log records" count={span.logs.length} open={span.logs.length > 0}>
        {span.logs.length === 0 ? (
          <p class="muted">No log records joined to this span.</p>
        ) : (
          <LogList logs={span.logs} />
        )}
      </Section>
      <LinksSection span={span} />
      <Section title="Resource" count={Object.keys(span.resource).length} open={false}>
        <AttributeTable attributes={span.resource} />
        <p class="muted">scope: {span.scope}</p>
      </Section>
    </aside>
  );
}

/** Duration, start, critical path, status, and for GenAI spans the model, agent, tokens and cost. */
function SpanFacts({ span, trace }: { span: SpanView; trace: TraceView }) {
  const critical = trace.criticalPath.durationBySpanNano.get(span.spanId);
  const g = span.genai;
  return (
    <dl class="facts">
      <dt>duration</dt>
      <dd data-testid="span-duration">{formatDuration(span.durationMs)}</dd>
      <dt>start</dt>
      <dd>
        {formatClock(span.startMs)}{' '}
        <span class="muted">(+{formatDuration(span.startMs - trace.startMs)})</span>
      </dd>
      {critical !== undefined && (
        <>
          <dt>critical path</dt>
          <dd>{formatDuration(critical / 1e6)}</dd>
        </>
      )}
      <dt>status</dt>
      <dd class={span.status === 'error' ? 'err' : ''}>
        {span.status}
        {span.statusMessage && ` — ${span.statusMessage}`}
      </dd>
      {(g.requestModel || g.responseModel) && (
        <>
          <dt>model</dt>
          <dd>
            {g.responseModel ?? g.requestModel}
            {g.provider && <span class="muted"> · {g.provider}</span>}
          </dd>
        </>
      )}
      {g.agentName && (
        <>
          <dt>agent</dt>
          <dd>{g.agentName}</dd>
        </>
      )}
      <UsageFacts span={span} trace={trace} />
    </dl>
  );
}

function UsageFacts({ span, trace }: { span: SpanView; trace: TraceView }) {
  const own = trace.tokens.own.get(span.spanId);
  const rolled = trace.tokens.rolledUp.get(span.spanId);
  const prices = usePrices();
  if (!own && !rolled) return null;
  const node = findNode(trace.roots, span.spanId);
  return (
    <>
      <dt>tokens</dt>
      <dd>
        <TokenLine own={own} rolled={rolled} counted={trace.tokens.counted.has(span.spanId)} />
      </dd>
      <dt>cost</dt>
      <dd data-testid="span-cost">
        <Cost byModel={node && tokensByModel([node], trace.tokens)} prices={prices} />
      </dd>
    </>
  );
}

/** A chat or agent span's messages; a tool span's call. */
function GenAiSections({ span }: { span: SpanView }) {
  const kind = span.genai.kind;
  if (kind === 'execute_tool')
    return (
      <Section title="Tool call">
        <ToolCallView call={toolCallOf(span.source.span)} />
      </Section>
    );
  if (kind !== 'chat' && kind !== 'invoke_agent') return null;
  const transcript = extractChatMessages(span.source.span, span.source.logs);
  if (transcript.system.length + transcript.input.length + transcript.output.length === 0) return null;
  return (
    <Section title="Messages">
      <ChatMessages label="system" messages={transcript.system} />
      <ChatMessages label="input" messages={transcript.input} />
      <ChatMessages label="output" messages={transcript.output} />
    </Section>
  );
}

function EventsSection({ span }: { span: SpanView }) {
  return (
    <Section title="Events" count={span.events.length} open={span.events.length > 0}>
      {span.events.length === 0 ? (
        <p class="muted">No events.</p>
      ) : (
        span.events.map((e, i) => (
          <div key={i} class="event">
            <div>
              <strong>{e.name}</strong> <span class="muted">+{formatDuration(e.timeMs - span.startMs)}</span>
            </div>
            <AttributeTable attributes={e.attributes} empty="" />
          </div>
        ))
      )}
    </Section>
  );
}

function LinksSection({ span }: { span: SpanView }) {
  return (
    <Section title="Links" count={span.links.length} open={span.links.length > 0}>
      {span.links.length === 0 ? (
        <p class="muted">No links.</p>
      ) : (
        span.links.map((l, i) => (
          <div key={i} class="event">
            <a href={routeHref({ view: 'trace', traceId: l.traceId, spanId: l.spanId })}>
              trace {l.traceId.slice(0, 8)} · span {l.spanId.slice(0, 8)}
            </a>
            <AttributeTable attributes={l.attributes} empty="" />
          </div>
        ))
      )}
    </Section>
  );
}

export function LogList({ logs }: { logs: LogView[] }) {
  return (
    <>
      {logs.map((l, i) => (
        <div key={i} class="event">
          <div>
            <span class={`sev sev-${l.severity.toLowerCase()}`}>{l.severity}</span>{' '}
            {l.eventName && <strong>{l.eventName}</strong>} <span class="muted">{formatClock(l.timeMs)}</span>
          </div>
          <AttributeValueView value={l.body} />
          {Object.keys(l.attributes).length > 0 && <AttributeTable attributes={l.attributes} />}
        </div>
      ))}
    </>
  );
}

function TokenLine({ own, rolled, counted }: { own?: TokenTotals; rolled?: TokenTotals; counted: boolean }) {
  if (own && counted) return <Tokens tokens={own} />;
  return (
    <span>
      {rolled && (
        <>
          <Tokens tokens={rolled} /> <span class="muted">from children</span>
        </>
      )}
      {own && !counted && (
        <span
          class="muted"
          title="This span reports usage that its children already report; it is not added again."
        >
          {' '}
          (reports {own.total}, not double-counted)
        </span>
      )}
    </span>
  );
}
