/** Model input/output as a chat transcript; tool calls and results as formatted JSON. */
import type { ChatMessage, MessagePart, ToolCall } from '../../../src/trace-model/index.js';
import { JsonView } from './common.js';

function Part({ part }: { part: MessagePart }) {
  switch (part.type) {
    case 'text':
      return <div class="msg-text">{part.content}</div>;
    case 'reasoning':
      return (
        <details class="msg-reasoning">
          <summary>reasoning</summary>
          <div class="msg-text">{part.content}</div>
        </details>
      );
    case 'tool_call':
      return (
        <div class="msg-tool">
          <div class="msg-tool-head">
            <span class="badge kind-execute_tool">tool call</span> <code>{part.name}</code>
            {part.id && <span class="muted"> · {part.id}</span>}
          </div>
          <JsonView value={part.arguments} />
        </div>
      );
    case 'tool_call_response':
      return (
        <div class="msg-tool">
          <div class="msg-tool-head">
            <span class="badge kind-execute_tool">tool result</span>
            {part.id && <span class="muted"> · {part.id}</span>}
          </div>
          <JsonView value={part.response} />
        </div>
      );
    case 'other':
      return (
        <div class="msg-tool">
          <div class="msg-tool-head muted">{part.partType}</div>
          <JsonView value={part.value} />
        </div>
      );
  }
}

export function ChatMessages({ messages, label }: { messages: ChatMessage[]; label: string }) {
  if (messages.length === 0) return null;
  return (
    <div class="chat" aria-label={label}>
      <div class="chat-label">{label}</div>
      {messages.map((m, i) => (
        <div key={i} class={`msg role-${m.role.replace(/[^a-z_-]/gi, '')}`} data-role={m.role}>
          <div class="msg-role">
            {m.role}
            {m.finishReason && <span class="muted"> · {m.finishReason}</span>}
          </div>
          {m.parts.length === 0 ? (
            <div class="muted">(empty)</div>
          ) : (
            m.parts.map((p, j) => <Part key={j} part={p} />)
          )}
        </div>
      ))}
    </div>
  );
}

export function ToolCallView({ call }: { call: ToolCall }) {
  return (
    <div class="tool-call">
      <div class="tool-call-head">
        <span class="badge kind-execute_tool">tool</span> <code>{call.name ?? 'unknown tool'}</code>
        {call.callId && <span class="muted"> · call {call.callId}</span>}
        {call.description && <div class="muted">{call.description}</div>}
      </div>
      <div class="tool-io">
        <div>
          <div class="chat-label">arguments</div>
          {call.arguments === undefined ? (
            <p class="muted">not recorded</p>
          ) : (
            <JsonView value={call.arguments} />
          )}
        </div>
        <div>
          <div class="chat-label">result</div>
          {call.result === undefined ? <p class="muted">not recorded</p> : <JsonView value={call.result} />}
        </div>
      </div>
    </div>
  );
}
