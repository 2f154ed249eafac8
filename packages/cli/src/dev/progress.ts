/**
 * Progress lines while the dev stack starts: on a terminal, one spinner line naming every step still
 * running (steps may overlap) with a ✔/✖ line printed above it as each ends; plain lines otherwise.
 */
export interface Progress {
  /** Begins a step; the returned handle ends it. */
  step(label: string): ProgressStep;
}

export interface ProgressStep {
  done(detail?: string): void;
  fail(detail?: string): void;
}

export interface ProgressOptions {
  write: (text: string) => void;
  /** Animate with a spinner (a TTY that understands carriage return and erase-line). */
  interactive: boolean;
  /** Milliseconds between spinner frames. */
  frameMs?: number;
  now?: () => number;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

export function createProgress(options: ProgressOptions): Progress {
  const now = options.now ?? Date.now;
  const active: { label: string; started: number }[] = [];
  let frame = 0;
  let timer: NodeJS.Timeout | undefined;

  const spinnerLine = () => {
    const oldest = Math.min(...active.map((a) => a.started));
    return `${FRAMES[frame]} ${active.map((a) => a.label).join(', ')} ${seconds(now() - oldest)}`;
  };
  const render = () => options.write(`${CLEAR_LINE}${spinnerLine()}`);

  return {
    step(label) {
      const entry = { label, started: now() };
      active.push(entry);
      if (options.interactive) {
        render();
        if (!timer) {
          timer = setInterval(() => {
            frame = (frame + 1) % FRAMES.length;
            render();
          }, options.frameMs ?? 80);
          timer.unref();
        }
      } else {
        options.write(`… ${label}\n`);
      }
      let ended = false;
      const end = (mark: string, detail: string | undefined) => {
        if (ended) return;
        ended = true;
        active.splice(active.indexOf(entry), 1);
        const line = `${mark} ${label}${detail ? ` ${detail}` : ''} (${seconds(now() - entry.started)})\n`;
        if (!options.interactive) return options.write(line);
        options.write(`${CLEAR_LINE}${line}`);
        if (active.length > 0) render();
        else {
          clearInterval(timer);
          timer = undefined;
        }
      };
      return {
        done: (detail) => end('✔', detail),
        fail: (detail) => end('✖', detail),
      };
    },
  };
}
