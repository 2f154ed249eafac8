import { describe, expect, it } from 'vitest';
import { type GuardedRequest, checkRequest, hostName } from './request-guard.js';

const req = (method: string, headers: GuardedRequest['headers']): GuardedRequest => ({ method, headers });

describe('hostName', () => {
  it('strips the port and a trailing dot, lowercases, unwraps IPv6 and refuses garbage', () => {
    expect(hostName('Example.COM.:8080')).toBe('example.com');
    expect(hostName('[::1]:4318')).toBe('::1');
    expect(hostName('127.0.0.1')).toBe('127.0.0.1');
    for (const bad of [
      '',
      ':80',
      '[::1',
      '[zz]',
      'a b',
      'evil.com:x',
      'évil.com',
      'a/b',
      'user@host',
      '[::1]x',
    ])
      expect(hostName(bad)).toBeUndefined();
  });
});

describe('checkRequest', () => {
  it('accepts loopback names and IP literals, refuses other hosts unless configured (DNS rebinding)', () => {
    for (const host of [
      'localhost:4318',
      'LOCALHOST',
      'ui.localhost:80',
      '127.0.0.1:4318',
      '[::1]:4318',
      '10.1.2.3',
    ])
      expect(checkRequest(req('GET', { host }))).toBeUndefined();
    expect(checkRequest(req('GET', { host: 'evil.example:4318' }))).toMatchObject({
      status: 403,
      code: 'host_not_allowed',
      message: expect.stringContaining("'evil.example'"),
    });
    expect(
      checkRequest(req('GET', { host: 'collector:4318' }), { allowedHosts: ['collector'] }),
    ).toBeUndefined();
    expect(
      checkRequest(req('GET', { host: 'a.corp.example' }), { allowedHosts: ['.corp.example'] }),
    ).toBeUndefined();
    expect(
      checkRequest(req('GET', { host: 'corp.example' }), { allowedHosts: ['.corp.example'] }),
    ).toBeUndefined();
    expect(
      checkRequest(req('GET', { host: 'evilcorp.example' }), { allowedHosts: ['.corp.example'] }),
    ).toMatchObject({
      status: 403,
    });
    expect(checkRequest(req('GET', { host: 'anything.example' }), { allowedHosts: ['*'] })).toBeUndefined();
    expect(checkRequest(req('GET', {}))).toMatchObject({ status: 400, code: 'bad_host' });
    expect(checkRequest(req('GET', { host: 'a b' }))).toMatchObject({ status: 400, code: 'bad_host' });
  });

  it('refuses state-changing requests a browser sends from another site', () => {
    const host = 'localhost:4318';
    // curl, SDKs and exporters send neither Origin nor Sec-Fetch-Site.
    expect(checkRequest(req('POST', { host, 'content-type': 'application/json' }))).toBeUndefined();
    // The collector's own UI.
    expect(
      checkRequest(
        req('POST', {
          host,
          origin: 'http://localhost:4318',
          'sec-fetch-site': 'same-origin',
          'content-type': 'application/json',
        }),
      ),
    ).toBeUndefined();
    for (const headers of [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site' },
      { origin: 'null' },
      { origin: 'http://localhost:4319' },
    ]) {
      expect(
        checkRequest(req('POST', { host, 'content-type': 'application/json', ...headers })),
      ).toMatchObject({
        status: 403,
        code: 'cross_site',
      });
      expect(checkRequest(req('DELETE', { host, ...headers }))).toMatchObject({ status: 403 });
      // Reads are left to CORS (no Access-Control-Allow-Origin: the page cannot read the answer).
      expect(checkRequest(req('GET', { host, ...headers }))).toBeUndefined();
    }
    expect(
      checkRequest(req('POST', { host, origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site' }), {
        allowedOrigins: ['http://localhost:3000'],
      }),
    ).toBeUndefined();
  });

  it('refuses the content types a browser sends without a preflight on state-changing requests', () => {
    const host = '127.0.0.1:4318';
    for (const type of [
      'text/plain',
      'text/plain; charset=utf-8',
      'application/x-www-form-urlencoded',
      'Multipart/Form-Data; boundary=x',
    ])
      expect(checkRequest(req('POST', { host, 'content-type': type }))).toMatchObject({
        status: 415,
        code: 'unsupported_media_type',
      });
    expect(
      checkRequest(req('POST', { host, 'content-type': 'text/plain' }), { allowSimpleBodies: true }),
    ).toBeUndefined();
    expect(checkRequest(req('POST', { host, 'content-type': 'application/x-protobuf' }))).toBeUndefined();
    expect(checkRequest(req('GET', { host, 'content-type': 'text/plain' }))).toBeUndefined();
  });

  it('reads the first value of repeated headers', () => {
    expect(checkRequest(req('GET', { host: ['localhost', 'evil.example'] }))).toBeUndefined();
  });
});
