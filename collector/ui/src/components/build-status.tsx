/**
 * A failed build of the runtime's agent under `agentrt dev`'s hot reload: the dev stack logs each
 * reload as the service `agentrt-dev` ("<runtime>: build failed: …" or "<runtime>: … rebuilt");
 * the latest one of this runtime shows here while it is a failure.
 */
import { useEffect, useState } from 'preact/hooks';
import { type LogRowView, listLogs } from '../api.js';

const POLL_MS = 2000;

export function BuildStatus({ runtimeName }: { runtimeName: string }) {
  const [latest, setLatest] = useState<LogRowView | undefined>();
  useEffect(() => {
    let stopped = false;
    const poll = async (): Promise<void> => {
      try {
        const { logs } = await listLogs({ service: 'agentrt-dev', q: `${runtimeName}: ` });
        const mine = logs.filter((l) => l.body.startsWith(`${runtimeName}: `));
        if (!stopped)
          setLatest(
            mine.reduce<LogRowView | undefined>((a, l) => (!a || l.cursor > a.cursor ? l : a), undefined),
          );
      } catch {
        // The collector is away for a moment: the next poll tells.
      }
    };
    void poll();
    const timer = setInterval(() => void poll(), POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [runtimeName]);
  if (!latest || latest.severityNumber < 17) return null;
  return <BuildError runtimeName={runtimeName} message={latest.body.slice(runtimeName.length + 2)} />;
}

/** `file:line:col message` lines of a failed build (transpile.ts); other lines as they are. */
const POSITIONED = /^(.+?):(\d+):(\d+) (.*)$/;

function BuildError({ runtimeName, message }: { runtimeName: string; message: string }) {
  const lines = message
    .replace(/^build failed: /, '')
    .split('\n')
    .filter(Boolean);
  return (
    <div class="error-box" role="alert" data-testid="build-error">
      <strong>{runtimeName} did not build: its sessions keep running the previous code.</strong>
      <ul class="build-errors">
        {lines.map((line, i) => {
          const at = POSITIONED.exec(line.trim());
          return (
            <li key={i}>
              {at ? (
                <>
                  <code data-testid="build-error-at">
                    {at[1]}:{at[2]}:{at[3]}
                  </code>{' '}
                  {at[4]}
                </>
              ) : (
                line
              )}
            </li>
          );
        })}
      </ul>
      <p class="muted small">
        Fix the file at that line and column, then save it: <code>agentrt dev</code> rebuilds the agent and
        moves its sessions to the new code (the dev terminal shows the same error).
      </p>
    </div>
  );
}
