// A container with a WebSocket at /ws (on the `ws` package): on connect it sends the handshake
// headers it got as one JSON text frame; then it echoes each frame with its type, closes with the
// code named by a text frame `close:<code>`, and answers pings (autoPong). /ping and /invocations too.
// For back-pressure tests: `flood:<frames>:<bytes>` sends that many binary frames (each starting with
// its 4-byte sequence number) as fast as its own socket takes them; `hold` stops reading the
// connection. POST /invocations answers the counters (bytes it handed to its sockets, frames and
// bytes it received); the body `resume` reads held connections again.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const counters = { flushedBytes: 0, receivedFrames: 0, receivedBytes: 0 };
const held = new Set();

async function flood(socket, frames, bytes) {
  for (let i = 0; i < frames && socket.readyState === socket.OPEN; i++) {
    const frame = Buffer.alloc(bytes, 0x61);
    frame.writeUInt32BE(i, 0);
    const sent = new Promise((resolve) =>
      socket.send(frame, { binary: true }, (error) => {
        if (!error) counters.flushedBytes += bytes;
        resolve();
      }),
    );
    // Its own writes wait once 1 MiB is queued, so what piles up is the runtime's, not this agent's.
    if (socket.bufferedAmount > 1024 * 1024) await sent;
  }
}

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (body.includes('resume')) {
      for (const socket of held) socket.resume();
      held.clear();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/ping' ? '{"status":"Healthy"}' : JSON.stringify({ pid: process.pid, ...counters }));
  });
});
const wss = new WebSocketServer({ server, path: '/ws', maxPayload: 1024 * 1024 });
wss.on('connection', (socket, req) => {
  socket.send(JSON.stringify({ hello: true, pid: process.pid, headers: req.headers }));
  socket.on('message', (data, isBinary) => {
    counters.receivedFrames++;
    counters.receivedBytes += data.length;
    const text = isBinary ? '' : data.toString('utf8');
    if (text.startsWith('close:')) return socket.close(Number(text.slice(6)), 'asked to close');
    if (text === 'big') return socket.send(Buffer.alloc(200 * 1024), { binary: true });
    if (text === 'hold') return held.add(socket) && socket.pause();
    if (text.startsWith('flood:')) {
      const [, frames, bytes] = text.split(':').map(Number);
      return void flood(socket, frames, bytes);
    }
    socket.send(data, { binary: isBinary });
  });
});
server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1');
