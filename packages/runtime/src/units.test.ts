import { isValidSessionId } from '@agentrt/propagation';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from './config.js';
import { parseVersionConfig, validateSessionId } from './control/validate.js';
import { withSessionBaggage } from './data/data-plane.js';
import { parseSigV4 } from './data/sigv4.js';
import { splitPath } from './http/router.js';

const base = {
  agentRuntimeArtifact: { containerConfiguration: { containerUri: 'file:///x' } },
  roleArn: 'arn:aws:iam::123456789012:role/R',
};

describe('small pieces', () => {
  it('splits the raw path before decoding, so an encoded ARN stays one segment', () => {
    expect(
      splitPath(
        '/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aus-east-1%3A123456789012%3Aruntime%2Fa-0123456789/invocations',
      ),
    ).toEqual([
      'runtimes',
      'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/a-0123456789',
      'invocations',
    ]);
    expect(splitPath('/runtimes/')).toEqual(['runtimes']);
  });

  it("sets the runtime's session.id in the worker's baggage, keeping the caller's other entries", () => {
    expect(withSessionBaggage(undefined, 's1')).toBe('session.id=s1');
    expect(withSessionBaggage('a=1, b=2', 's 1')).toBe('a=1,b=2,session.id=s%201');
    // The session header decides: a caller's own session.id is replaced, its other entries kept.
    expect(withSessionBaggage('session.id=other,a=1;prop', 's1')).toBe('session.id=s1,a=1;prop');
    expect(withSessionBaggage('session.id=x,session.id=y', 's1')).toBe('session.id=s1');
    expect(withSessionBaggage('not baggage at all,,=', 's1')).toBe('session.id=s1');
  });

  it('reads the region from a SigV4 credential scope', () => {
    expect(
      parseSigV4(
        'AWS4-HMAC-SHA256 Credential=AKID/20250101/eu-central-1/bedrock-agentcore/aws4_request, SignedHeaders=host, Signature=ab',
      ),
    ).toEqual({
      accessKeyId: 'AKID',
      date: '20250101',
      region: 'eu-central-1',
      service: 'bedrock-agentcore',
    });
    expect(parseSigV4('Bearer x')).toBeUndefined();
  });

  it('applies the documented lifecycle defaults', () => {
    expect(parseVersionConfig(base, 60).lifecycleConfiguration).toEqual({
      idleRuntimeSessionTimeout: 900,
      maxLifetime: 28_800,
    });
    expect(
      parseVersionConfig({ ...base, lifecycleConfiguration: { maxLifetime: 600 } }, 60)
        .lifecycleConfiguration,
    ).toEqual({ idleRuntimeSessionTimeout: 600, maxLifetime: 600 });
    expect(
      parseVersionConfig({ ...base, lifecycleConfiguration: { maxLifetime: 1200 } }, 60)
        .lifecycleConfiguration,
    ).toEqual({ idleRuntimeSessionTimeout: 900, maxLifetime: 1200 });
    expect(() =>
      parseVersionConfig({ ...base, lifecycleConfiguration: { idleRuntimeSessionTimeout: 30 } }, 60),
    ).toThrow(/idleRuntimeSessionTimeout/);
  });

  it('reads env with explicit options first, blank as unset and bad values as a warning', () => {
    const config = resolveRuntimeConfig(
      { port: 9 },
      {
        AGENTRT_RUNTIME_PORT: '1234',
        AGENTRT_MAX_SESSIONS: 'lots',
        AGENTRT_REGION: ' ',
        AGENTRT_API_KEYS: 'a, b',
      },
    );
    expect(config.port).toBe(9);
    expect(config.maxSessions).toBe(100);
    expect(config.region).toBe('us-east-1');
    expect(config.apiKeys).toEqual(['a', 'b']);
    expect(config.warnings[0]).toContain('AGENTRT_MAX_SESSIONS');
  });
});

describe('session ids: the runtime adds only the 33-char minimum to @agentrt/propagation rules', () => {
  const long = (s: string) => s.padEnd(40, 'x');
  it('accepts exactly the ids the worker side accepts, 33 chars and up', () => {
    for (const id of [long('uuid-like-'), long('user:1@a.b_c=d+e/f-')])
      expect(isValidSessionId(validateSessionId(id, false))).toBe(true);
  });
  it('refuses what propagation would drop, naming the field', () => {
    for (const id of [
      long('has space '),
      long('"quoted"'),
      long('comma,'),
      long('-leading-dash'),
      'é'.repeat(40),
    ]) {
      expect(isValidSessionId(id)).toBe(false);
      expect(() => validateSessionId(id, false)).toThrow(/runtimeSessionId/);
    }
    expect(() => validateSessionId('short', false)).toThrow(/under 33/);
    expect(validateSessionId('short', true)).toBe('short');
    expect(() => validateSessionId('x'.repeat(257), true)).toThrow(/over 256/);
  });
});
