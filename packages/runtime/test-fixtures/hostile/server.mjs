// Hostile agent for the isolation tests: runs whatever shell command the invocation sends
// ({"sh": "..."}) inside its session and answers with its exit code, stdout and stderr. It is what
// an attacker who controls an agent's tools gets; the tests check what that cannot reach.
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ status: 'Healthy' }));
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let input = {};
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      // not JSON: nothing to run
    }
    if (input.address) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(server.address()));
    }
    if (input.allocMb) {
      // Grow this very process (the worker), as a leaking agent would.
      const kept = [];
      for (let i = 0; i < Number(input.allocMb); i++) kept.push(Buffer.alloc(1024 * 1024, 1));
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ allocatedMb: kept.length }));
    }
    const result = spawnSync('/bin/sh', ['-c', String(input.sh ?? 'true')], {
      encoding: 'utf8',
      timeout: Number(input.timeoutMs ?? 20_000),
      maxBuffer: 8 * 1024 * 1024,
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        code: result.status,
        signal: result.signal,
        stdout: result.stdout ?? '',
        stderr: result.stderr ?? '',
      }),
    );
  });
});
// Where the runtime says (HOST), else every interface, as a container's agent would.
server.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '0.0.0.0');
