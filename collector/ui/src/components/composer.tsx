/** The Inspector's message box: Enter sends, Shift+Enter is a new line. */
import { useState } from 'preact/hooks';

export function Composer({
  send,
  busy,
  placeholder,
  testId,
}: {
  /** Sends the text; the box is cleared first. */
  send: (text: string) => void;
  busy: boolean;
  placeholder: string;
  /** The box's test id; the button's is `<testId>-send`. */
  testId: string;
}) {
  const [input, setInput] = useState('');
  const submit = (): void => {
    const text = input.trim();
    if (!text || busy) return;
    setInput('');
    send(text);
  };
  return (
    <form
      class="chat-input"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <textarea
        data-testid={testId}
        value={input}
        placeholder={placeholder}
        onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            submit();
          }
        }}
      />
      <button class="btn primary" type="submit" data-testid={`${testId}-send`} disabled={busy}>
        Send
      </button>
    </form>
  );
}
