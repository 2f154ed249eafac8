// A container with a WebSocket at /ws (on the `ws` package): on connect it sends the handshake
// headers it got as one JSON text frame; then it echoes each frame with its type, closes with the
// code named by a text frame `close:<code>`, and answers pings (autoPong). /ping and /invocations too.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const server = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(req.url === '/ping' ? '{"status":"Healthy"}' : JSON.stringify({ pid: process.pid }));
});
const wss = new WebSocketServer({ server, path: '/ws', maxPayload: 1024 * 1024 });
wss.on('connection', (socket, req) => {
  socket.send(JSON.stringify({ hello: true, pid: process.pid, headers: req.headers }));
  socket.on('message', (data, isBinary) => {
    const text = isBinary ? '' : data.toString('utf8');
    if (text.startsWith('close:')) return socket.close(Number(text.slice(6)), 'asked to close');
    if (text === 'big') return socket.send(Buffer.alloc(200 * 1024), { binary: true });
    socket.send(data, { binary: isBinary });
  });
});
server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1');
