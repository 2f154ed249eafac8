/** The Inspector's MCP and A2A panels: tools called from a form built from their input schema; the agent card and a streamed message. */
import { useMemo, useState } from 'preact/hooks';
import { ErrorBox, JsonView, Loading } from '../components/common.js';
import { Composer } from '../components/composer.js';
import { TurnSpans } from '../components/turn-spans.js';
import { useAsync } from '../hooks.js';
import type { RuntimeAuth, RuntimeInfo } from '../inspector-client.js';
import { newSessionId, newTraceparent } from '../inspector-model.js';
import { type McpTool, createMcpClient, getAgentCard, streamA2aMessage } from '../inspector-protocols.js';
import { type FormField, formArguments, formFields } from '../schema-form.js';

interface PanelProps {
  host: string;
  runtime: RuntimeInfo;
  auth: RuntimeAuth;
}

function FieldInput({
  field,
  value,
  onChange,
}: {
  field: FormField;
  value: string | boolean | undefined;
  onChange: (v: string | boolean) => void;
}) {
  const common = { name: field.name, 'data-testid': `field-${field.name}` };
  if (field.kind === 'boolean')
    return (
      <input
        type="checkbox"
        {...common}
        checked={value === true}
        onChange={(e) => onChange((e.target as HTMLInputElement).checked)}
      />
    );
  if (field.kind === 'enum')
    return (
      <select
        {...common}
        value={String(value ?? '')}
        onChange={(e) => onChange((e.target as HTMLSelectElement).value)}
      >
        <option value="" />
        {field.options!.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  if (field.kind === 'json')
    return (
      <textarea
        {...common}
        value={String(value ?? '')}
        onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)}
      />
    );
  return (
    <input
      type="text"
      // Numbers are typed as text: the form names the field when one is not a number.
      inputMode={field.kind === 'string' ? 'text' : 'decimal'}
      {...common}
      value={String(value ?? '')}
      onInput={(e) => onChange((e.target as HTMLInputElement).value)}
    />
  );
}

function ToolForm({ tool, call }: { tool: McpTool; call: (args: Record<string, unknown>) => Promise<void> }) {
  const fields = useMemo(() => formFields(tool.inputSchema), [tool]);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <form
      class="tool-form"
      data-testid="tool-form"
      onSubmit={(e) => {
        e.preventDefault();
        let args: Record<string, unknown>;
        try {
          args = formArguments(fields, values);
        } catch (error) {
          setProblem((error as Error).message);
          return;
        }
        setProblem(undefined);
        void call(args);
      }}
    >
      {tool.description && <p class="muted">{tool.description}</p>}
      {fields.map((f) => (
        <label key={f.name}>
          {f.name}
          {f.required ? ' *' : ''} <span class="muted">{f.description}</span>
          <FieldInput
            field={f}
            value={values[f.name]}
            onChange={(v) => setValues({ ...values, [f.name]: v })}
          />
        </label>
      ))}
      {problem && (
        <p class="error" data-testid="form-error">
          {problem}
        </p>
      )}
      <button class="btn primary" type="submit" data-testid="call-tool">
        Call {tool.name}
      </button>
    </form>
  );
}

export function McpPanel({ host, runtime, auth }: PanelProps) {
  const sessionId = useMemo(newSessionId, []);
  const client = useMemo(
    () => createMcpClient({ host, arn: runtime.arn, sessionId, auth }),
    [host, runtime.arn, sessionId, auth],
  );
  const tools = useAsync(() => client.listTools(), [client]);
  const [chosen, setChosen] = useState<string | undefined>();
  const [result, setResult] = useState<{ traceId: string; value?: unknown; error?: Error } | undefined>();
  const tool = tools.data?.find((t) => t.name === chosen) ?? tools.data?.[0];
  const call = async (args: Record<string, unknown>): Promise<void> => {
    const { traceId, header } = newTraceparent();
    setResult({ traceId });
    try {
      setResult({ traceId, value: await client.callTool(tool!.name, args, header) });
    } catch (error) {
      setResult({ traceId, error: error as Error });
    }
  };
  if (tools.error) return <ErrorBox error={tools.error} retry={tools.reload} />;
  if (!tools.data) return <Loading what="MCP tools" />;
  return (
    <div class="inspector-grid">
      <aside class="inspector-sessions">
        <ul data-testid="mcp-tools">
          {tools.data.map((t) => (
            <li key={t.name} class={t.name === tool?.name ? 'active' : ''}>
              <button type="button" class="link" onClick={() => setChosen(t.name)}>
                {t.name}
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <div>
        {tool && <ToolForm key={tool.name} tool={tool} call={call} />}
        {result?.error && <ErrorBox error={result.error} />}
        {result?.value !== undefined && (
          <div data-testid="tool-result">
            <JsonView value={result.value} />
          </div>
        )}
      </div>
      <aside class="inspector-spans">
        {result && <TurnSpans key={result.traceId} traceId={result.traceId} />}
      </aside>
    </div>
  );
}

export function A2aPanel({ host, runtime, auth }: PanelProps) {
  const target = useMemo(
    () => ({ host, arn: runtime.arn, sessionId: newSessionId(), auth }),
    [host, runtime.arn, auth],
  );
  const card = useAsync(() => getAgentCard(target), [target]);
  const [busy, setBusy] = useState(false);
  const [events, setEvents] = useState<{ kind: string; text: string }[]>([]);
  const [turn, setTurn] = useState<{ traceId: string; error?: Error } | undefined>();
  const send = async (text: string): Promise<void> => {
    const { traceId, header } = newTraceparent();
    setEvents([]);
    setTurn({ traceId });
    setBusy(true);
    try {
      await streamA2aMessage(target, text, header, (kind, t) =>
        setEvents((prev) => [...prev, { kind, text: t }]),
      );
    } catch (error) {
      setTurn({ traceId, error: error as Error });
    } finally {
      setBusy(false);
    }
  };
  if (card.error) return <ErrorBox error={card.error} retry={card.reload} />;
  if (!card.data) return <Loading what="the agent card" />;
  const c = card.data as {
    name?: string;
    description?: string;
    skills?: { name: string; description?: string }[];
  };
  return (
    <div class="inspector-grid">
      <aside class="inspector-sessions" data-testid="agent-card">
        <h2>{c.name}</h2>
        <p class="muted">{c.description}</p>
        <ul>
          {(c.skills ?? []).map((s) => (
            <li key={s.name} title={s.description}>
              {s.name}
            </li>
          ))}
        </ul>
      </aside>
      <div class="inspector-chat">
        <ol class="chat-log">
          {events.map((e, i) => (
            <li key={i} class="chat-msg agent" data-testid="a2a-event">
              <span class="badge">{e.kind}</span> {e.text}
            </li>
          ))}
        </ol>
        {turn?.error && <ErrorBox error={turn.error} />}
        <Composer
          send={(text) => void send(text)}
          busy={busy}
          placeholder={`Message ${runtime.name}`}
          testId="a2a-input"
        />
      </div>
      <aside class="inspector-spans">{turn && <TurnSpans key={turn.traceId} traceId={turn.traceId} />}</aside>
    </div>
  );
}
