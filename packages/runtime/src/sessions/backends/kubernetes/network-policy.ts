// A runtime version's NetworkPolicy: the kubernetes counterpart of the local backends' egress
// rules (sessions reach the cluster DNS, the runtime's pods and, for PUBLIC versions, the internet
// less the ranges the local backends close).
import type {
  V1NetworkPolicy,
  V1NetworkPolicyPeer,
  V1NetworkPolicyPort,
  V1OwnerReference,
} from '@kubernetes/client-node';
import { type SessionTarget } from '../../backend.js';
import { CLOSED_V4, CLOSED_V6 } from '../../egress.js';
import { LABELS, POD_PORT, type PodSettings, networkPolicyName, versionLabels } from './pod-spec.js';

const DNS_PORTS: V1NetworkPolicyPort[] = [
  { protocol: 'UDP', port: 53 },
  { protocol: 'TCP', port: 53 },
];

/**
 * Where a version's sessions may connect: the cluster DNS, the runtime's pods on its allowlisted
 * ports, and — for networkMode PUBLIC — the internet, less the ranges the local backends close
 * (private networks, the node, link-local cloud metadata, reserved ranges). networkMode VPC has no
 * cluster counterpart for its subnets and security groups: its sessions get no internet.
 */
function egressRules(target: SessionTarget, settings: PodSettings) {
  const runtimePods: V1NetworkPolicyPeer = { podSelector: { matchLabels: settings.runtimeSelector } };
  const dns: V1NetworkPolicyPeer = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': settings.dnsNamespace } },
    podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
  };
  const rules = [{ to: [dns], ports: DNS_PORTS }];
  if (settings.runtimePorts.length > 0)
    rules.push({
      to: [runtimePods],
      ports: settings.runtimePorts.map((port) => ({ protocol: 'TCP', port })),
    });
  if (target.version.config.networkConfiguration.networkMode === 'PUBLIC')
    rules.push({
      to: [
        { ipBlock: { cidr: '0.0.0.0/0', except: [...CLOSED_V4] } },
        { ipBlock: { cidr: '::/0', except: [...CLOSED_V6] } },
      ],
      ports: [],
    });
  return rules.map((rule) => (rule.ports.length > 0 ? rule : { to: rule.to }));
}

/**
 * The NetworkPolicy of a runtime version's pods: default deny both ways, then connections in only
 * from the runtime's pods to the agent's port, and out only as `egressRules` allows.
 */
export function sessionNetworkPolicy(
  target: SessionTarget,
  settings: PodSettings,
  owner?: V1OwnerReference,
): V1NetworkPolicy {
  const labels = versionLabels(target);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(target.runtime.id, target.version.version),
      namespace: settings.namespace,
      labels: { ...labels, [LABELS.component]: 'session-network' },
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      podSelector: { matchLabels: { ...labels, [LABELS.component]: 'session' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          // client-node's name for `from` (its serializer writes `from`).
          _from: [{ podSelector: { matchLabels: settings.runtimeSelector } }],
          ports: [{ protocol: 'TCP', port: POD_PORT }],
        },
      ],
      egress: egressRules(target, settings),
    },
  };
}
