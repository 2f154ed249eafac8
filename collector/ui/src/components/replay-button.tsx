/**
 * Replay: sends the trace's invocation again to the code running now (replay.ts) and, once the new
 * trace is in the collector, opens the compare view on the pair. A trace that cannot be replayed
 * says why (no runtime call, request not recorded, runtime gone).
 */
import { useState } from 'preact/hooks';
import { replayRequestOf } from '../../../src/trace-model/index.js';
import { getTraceResponse } from '../api.js';
import { navigate } from '../hooks.js';
import { replayHost, sendReplay } from '../replay.js';
import { routeHref } from '../router.js';

/** How long the new trace may take to reach the collector before the compare opens anyway. */
const ARRIVAL_MS = 15_000;

async function arrived(traceId: string): Promise<void> {
  for (const deadline = Date.now() + ARRIVAL_MS; Date.now() < deadline;) {
    if (
      await getTraceResponse(traceId).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function ReplayButton({ traceId }: { traceId: string }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const replay = async (): Promise<void> => {
    setState({ busy: true });
    try {
      const request = replayRequestOf(traceId, (await getTraceResponse(traceId)).roots);
      const replayed = await sendReplay(replayHost(), request);
      await arrived(replayed);
      navigate(routeHref({ view: 'compare', a: traceId, b: replayed }));
    } catch (error) {
      setState({ busy: false, error: `Replay failed: ${(error as Error).message}` });
    }
  };
  return (
    <>
      <button
        type="button"
        class="btn ghost"
        data-testid="replay"
        disabled={state.busy}
        title="Send this trace's invocation again to the code running now, then compare the two"
        onClick={() => void replay()}
      >
        {state.busy ? 'Replaying…' : 'Replay'}
      </button>
      {state.error && (
        <span class="error-text" role="alert" data-testid="replay-error">
          {state.error}
        </span>
      )}
    </>
  );
}
