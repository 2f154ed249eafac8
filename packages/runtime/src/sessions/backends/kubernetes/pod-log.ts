// A session pod's output in the runtime's own log, as a local worker's is: pods/log followed
// (client-node's Log, `follow=true`), each line a log record (parseWorkerLine: a structured
// logger's JSON keeps its level, message and fields). pods/log merges stdout and stderr, so a plain
// line is INFO. A follow the API server ends while the pod lives is taken up again from then on
// (`tailLines=0`: a line written in the gap is lost, none is logged twice).
import { Writable } from 'node:stream';
import { type KubeConfig, Log } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';
import { parseWorkerLine } from '../../worker-output.js';

export interface PodLogOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  container: string;
  /** The logger of the pod's lines now (a warm pod's is tagged with its session once claimed). */
  logger: () => Logger;
  /** False once the pod ended: a follow that ends then is not taken up again. */
  alive: () => boolean;
}

const RESUME_MS = 1000;

/** Follows the pod's log into `logger` until `stop()` or the pod's end. */
export function followPodLog(options: PodLogOptions): { stop(): void } {
  let stopped = false;
  let abort: AbortController | undefined;
  const follow = (tailLines: number | undefined) => {
    if (stopped || !options.alive()) return;
    let partial = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line) log(line);
        done();
      },
      final(done) {
        if (partial) log(partial);
        done();
        setTimeout(() => follow(0), RESUME_MS).unref();
      },
    });
    // A cut connection errors client-node's source stream, which has no listener of its own (the
    // process would die of it): heard here, it ends the follow, which is then taken up again.
    sink.on('pipe', (source: NodeJS.ReadableStream) => source.on('error', () => sink.end()));
    const { kubeConfig, namespace, name, container } = options;
    new Log(kubeConfig)
      .log(namespace, name, container, sink, {
        follow: true,
        ...(tailLines === undefined ? {} : { tailLines }),
      })
      .then(
        (controller) => {
          abort = controller;
          if (stopped) controller.abort();
        },
        // Not served yet, or the API server is away: tried again while the pod lives.
        () => setTimeout(() => follow(tailLines), RESUME_MS).unref(),
      );
  };
  const log = (line: string) => {
    const out = parseWorkerLine(line, 'stdout');
    options.logger()[out.level](out.msg, { ...out.fields, stream: 'pod' });
  };
  follow(undefined);
  return {
    stop() {
      stopped = true;
      abort?.abort();
    },
  };
}
