/** Progress lines while the dev stack starts: a spinner on a terminal, plain lines otherwise. */
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
  return {
    step(label) {
      const started = now();
      let frame = 0;
      let timer: NodeJS.Timeout | undefined;
      if (options.interactive) {
        options.write(`${FRAMES[0]} ${label}`);
        timer = setInterval(() => {
          frame = (frame + 1) % FRAMES.length;
          options.write(`${CLEAR_LINE}${FRAMES[frame]} ${label} ${seconds(now() - started)}`);
        }, options.frameMs ?? 80);
        timer.unref();
      } else {
        options.write(`… ${label}\n`);
      }
      let ended = false;
      const end = (mark: string, detail: string | undefined) => {
        if (ended) return;
        ended = true;
        if (timer) clearInterval(timer);
        const suffix = detail ? ` ${detail}` : '';
        const line = `${mark} ${label}${suffix} (${seconds(now() - started)})\n`;
        options.write(options.interactive ? `${CLEAR_LINE}${line}` : line);
      };
      return {
        done: (detail) => end('✔', detail),
        fail: (detail) => end('✖', detail),
      };
    },
  };
}
