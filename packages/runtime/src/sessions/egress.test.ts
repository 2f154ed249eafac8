import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { egressRuleset, hostAddresses } from './egress.js';
import { HELPER_ENV, helperPath } from './helpers.js';

const canLoad = process.getuid?.() === 0 && helperPath('nft') !== undefined && helperPath('sh') !== undefined;

describe('egress ruleset', () => {
  it('closes private, link-local and the host addresses, keeping loopback and DNS open', () => {
    const rules = egressRuleset(['192.0.2.2', '2001:db8::2', '127.0.0.1']);
    expect(rules).toContain('oifname "lo" accept');
    expect(rules).toMatch(/ip daddr 10\.0\.2\.3 udp dport 53 accept/);
    for (const range of ['169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'])
      expect(rules).toContain(range);
    expect(rules).toMatch(/ip daddr \{[^}]*192\.0\.2\.2[^}]*\} reject/);
    expect(rules).toMatch(/ip6 daddr \{[^}]*2001:db8::2[^}]*\} reject/);
    expect(rules.indexOf('oifname "lo" accept')).toBeLessThan(rules.indexOf('reject'));
  });

  it.runIf(canLoad)("is accepted by nft in a fresh network namespace with this host's addresses", () => {
    const loaded = spawnSync('unshare', ['-n', helperPath('nft')!, '-f', '-'], {
      input: egressRuleset(hostAddresses()),
      env: HELPER_ENV,
      encoding: 'utf8',
    });
    expect(loaded.stderr).toBe('');
    expect(loaded.status).toBe(0);
  });
});
