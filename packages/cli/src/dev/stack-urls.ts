/** The dev stack's URL helpers: how a bound host appears in URLs, loopback ports, page origins. */

export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The ports of those URLs that point at this host's loopback (what a sandboxed session may call). */
export function loopbackPorts(urls: readonly (string | undefined)[]): number[] {
  const ports: number[] = [];
  for (const raw of urls) {
    if (!raw) continue;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      continue; // not a URL: nothing to open
    }
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) continue;
    ports.push(Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
  }
  return ports;
}

/** The origins a browser shows the collector's pages under: its URL, and localhost for a loopback one. */
export function pageOrigins(collectorUrl: string, port: number): string[] {
  const origins = [new URL(collectorUrl).origin];
  if (/^http:\/\/(127\.0\.0\.1|\[::1\])/.test(collectorUrl)) origins.push(`http://localhost:${port}`);
  return origins;
}
