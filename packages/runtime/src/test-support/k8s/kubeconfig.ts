// A kubeconfig for the test API server, written to a temporary file for kubectl and client-node.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function kubeconfigYaml(server: string, token: string | undefined, namespace = 'default'): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: agentrt-test',
    '  cluster:',
    `    server: ${server}`,
    // plain HTTP on loopback: client-node refuses it unless TLS checks are off
    '    insecure-skip-tls-verify: true',
    'users:',
    '- name: agentrt-test',
    `  user: ${token ? `{token: ${token}}` : '{}'}`,
    'contexts:',
    '- name: agentrt-test',
    '  context:',
    '    cluster: agentrt-test',
    '    user: agentrt-test',
    `    namespace: ${namespace}`,
    'current-context: agentrt-test',
    '',
  ].join('\n');
}

/** Writes the kubeconfig to a new temporary folder and returns its path. */
export function writeKubeconfig(server: string, token?: string, namespace?: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'agentrt-kubeconfig-')), 'config');
  writeFileSync(path, kubeconfigYaml(server, token, namespace), { mode: 0o600 });
  return path;
}
