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
  return (
    <div class="error-box" role="alert" data-testid="build-error">
      <strong>The agent's last build failed; its sessions keep the previous code.</strong>
      <pre class="code">{latest.body.slice(runtimeName.length + 2)}</pre>
    </div>
  );
}
