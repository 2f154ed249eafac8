import { describe, expect, it } from 'vitest';
import { createAttributeFilter } from './attribute-filter.js';
import { DEFAULT_REDACTED_QUERY_PARAMS, createUrlRedactor } from './url-redaction.js';

describe('url redaction', () => {
  const r = createUrlRedactor(['session_key']);

  it('redacts every default parameter, any case, keeping the rest of the URL as it was', () => {
    for (const name of DEFAULT_REDACTED_QUERY_PARAMS) {
      for (const spelled of [name, name.toUpperCase(), name.toLowerCase()]) {
        expect(r.redactUrl(`https://h.example/p?a=1&${spelled}=s3cr%3Dt&b=2#frag`)).toBe(
          `https://h.example/p?a=1&${spelled}=REDACTED&b=2#frag`,
        );
      }
    }
    expect(r.redactUrl('https://h.example/p?q=weather&page=2')).toBe('https://h.example/p?q=weather&page=2');
    expect(
      r.redactUrl('https://s3.example/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F&X-Amz-Signature=abc'),
    ).toBe('https://s3.example/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED');
    // Encoded names, names without a value, the configured extra.
    expect(r.redactUrl('http://h/?access%5Ftoken=x&token&session_key=k')).toBe(
      'http://h/?access%5Ftoken=REDACTED&token=REDACTED&session_key=REDACTED',
    );
  });

  it('redacts userinfo', () => {
    expect(r.redactUrl('https://alice:pw@h.example:8443/p?x=1')).toBe(
      'https://REDACTED:REDACTED@h.example:8443/p?x=1',
    );
    expect(r.redactUrl('https://tokenonly@h.example/')).toBe('https://REDACTED@h.example/');
    expect(r.redactUrl('https://h.example/a@b')).toBe('https://h.example/a@b');
  });

  it('redacts url.full, url.query, http.url and any http(s) URL value through the attribute filter', () => {
    const filter = createAttributeFilter({
      captureMessageContent: false,
      redactAttributes: [],
      redactQueryParams: ['sid'],
    });
    const attrs: Record<string, unknown> = {
      'url.full': 'https://api.example/v1?api_key=k1&q=x',
      'url.query': 'password=hunter2&lang=en',
      'http.url': 'http://u:p@old.example/?sid=1',
      'http.target': '/invocations?token=t',
      'app.callback': 'https://hook.example/cb?secret=s',
      'app.note': 'see https://x.example/?key=k',
      'url.path': '/p',
      'http.response.status_code': 200,
    };
    expect(filter.apply(attrs)).toBe(true);
    expect(attrs).toEqual({
      'url.full': 'https://api.example/v1?api_key=REDACTED&q=x',
      'url.query': 'password=REDACTED&lang=en',
      'http.url': 'http://REDACTED:REDACTED@old.example/?sid=REDACTED',
      'http.target': '/invocations?token=REDACTED',
      'app.callback': 'https://hook.example/cb?secret=REDACTED',
      // Free text is not parsed for URLs.
      'app.note': 'see https://x.example/?key=k',
      'url.path': '/p',
      'http.response.status_code': 200,
    });
    // Idempotent: a second pass changes nothing.
    expect(filter.apply(attrs)).toBe(false);
  });
});
