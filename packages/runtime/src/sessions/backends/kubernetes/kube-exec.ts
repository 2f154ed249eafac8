// `node kube-exec.js <kubeconfig|in-cluster:host:port> <namespace> <pod> <container> <argv…>`: runs a command
// in a session's pod through pods/exec (client-node, WebSocket), with this process's stdout and
// stderr, and exits with the command's exit code. It is the helper InvokeAgentRuntimeCommand spawns
// for a kubernetes session, as bwrap's nsenter is for a local one. The pod has its own environment:
// what the runtime hands over on ENV_FD is left unread.
import { Exec, KubeConfig, type V1Status } from '@kubernetes/client-node';

function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  return cause?.message ? Number(cause.message) : 1;
}

async function main(): Promise<void> {
  const [source, namespace, pod, container, ...argv] = process.argv.slice(2);
  if (!source || !namespace || !pod || !container || argv.length === 0) {
    process.stderr.write(
      'usage: kube-exec <kubeconfig|in-cluster:host:port> <namespace> <pod> <container> <argv…>\n',
    );
    process.exit(2);
  }
  const kc = new KubeConfig();
  const inCluster = /^in-cluster:(.+):(\d+)$/.exec(source);
  if (inCluster) {
    // The runtime hands helpers a bare environment: the service address comes on the command line.
    process.env.KUBERNETES_SERVICE_HOST = inCluster[1];
    process.env.KUBERNETES_SERVICE_PORT = inCluster[2];
    kc.loadFromCluster();
  } else kc.loadFromFile(source);
  const status = await new Promise<V1Status>((resolve, reject) => {
    new Exec(kc)
      .exec(namespace, pod, container, argv, process.stdout, process.stderr, null, false, resolve)
      .then((socket) => socket.on('close', () => undefined))
      .catch(reject);
  });
  process.exitCode = exitCodeOf(status);
}

main().catch((error: unknown) => {
  process.stderr.write(`kube-exec: ${(error as Error).message}\n`);
  process.exitCode = 126;
});
