import { isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { requireHelper, runHelper } from './helpers.js';

/** slirp4netns's DNS forwarder inside the session's namespace: the one private address left open. */
export const SLIRP_DNS = '10.0.2.3';

/**
 * Addresses a session must never reach through its outbound network: this host (loopback, and
 * slirp's gateway 10.0.2.2 inside 10/8), private networks (RFC 1918, CGNAT, unique-local), link-local
 * (cloud metadata at 169.254.169.254, fe80::/10), and the reserved, benchmark and multicast ranges.
 */
export const CLOSED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
export const CLOSED_V6 = ['::/127', '::ffff:0:0/96', '64:ff9b::/96', 'fc00::/7', 'fe80::/10', 'ff00::/8'];

/** Every address of this host's interfaces: a service bound to 0.0.0.0 answers on each. */
export function hostAddresses(): string[] {
  const found: string[] = [];
  for (const entries of Object.values(networkInterfaces()))
    for (const entry of entries ?? []) found.push(entry.address.split('%')[0] as string);
  return [...new Set(found)];
}

/**
 * The nftables ruleset of a session's network namespace: loopback (its bridges to the allowlisted
 * host ports and its telemetry relay) and its DNS servers' port 53 (slirp's by default) stay open; every closed range and every
 * address of the host is refused at once (a reject, not a silent drop, so a client fails fast).
 * Only new connections are refused: answers to connections made to the session still leave.
 */
export function egressRuleset(host: readonly string[], dns: readonly string[] = [SLIRP_DNS]): string {
  const v4 = [...CLOSED_V4, ...host.filter((a) => isIPv4(a))];
  const v6 = [...CLOSED_V6, ...host.filter((a) => isIPv6(a))];
  return [
    'table inet agentrt_egress {',
    '  chain out {',
    '    type filter hook output priority 0; policy accept;',
    '    oifname "lo" accept',
    // Answers to connections made to the session (a container's published port) go back out.
    '    ct state established,related accept',
    ...dns
      .filter((a) => isIPv4(a))
      .flatMap((a) => [`    ip daddr ${a} udp dport 53 accept`, `    ip daddr ${a} tcp dport 53 accept`]),
    ...dns
      .filter((a) => isIPv6(a))
      .flatMap((a) => [`    ip6 daddr ${a} udp dport 53 accept`, `    ip6 daddr ${a} tcp dport 53 accept`]),
    `    ip daddr { ${v4.join(', ')} } reject with icmp type admin-prohibited`,
    `    ip6 daddr { ${v6.join(', ')} } reject with icmpv6 type admin-prohibited`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * Loads the egress ruleset into the network namespace of a sandbox's first process, before the
 * worker runs and before slirp4netns connects the namespace to the outside. nft runs by absolute
 * path, with HELPER_ENV, in the host's mount namespace (only the network namespace is joined).
 */
export async function closeEgress(
  sandboxPid: number,
  host = hostAddresses(),
  dns: readonly string[] = [SLIRP_DNS],
): Promise<void> {
  const nft = [
    requireHelper('nsenter'),
    `--net=/proc/${sandboxPid}/ns/net`,
    '--',
    requireHelper('nft'),
    '-f',
    '-',
  ];
  await runHelper(nft, "nft (the session's egress rules)", { input: egressRuleset(host, dns) });
}
