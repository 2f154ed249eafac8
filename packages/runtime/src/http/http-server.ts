import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type Duplex } from 'node:stream';
import { type RuntimeConfig } from '../config.js';
import { type RuntimeApiError } from '../errors.js';
import { guardRuntimeRequest } from './request-guard.js';

export interface ListeningServer {
  server: Server;
  port: number;
  /** `http://host:port`, with the loopback address when it listens on every interface. */
  url: string;
}

/** Where WebSocket upgrades go once the request guard let them through (the data plane's gateway). */
export interface UpgradeHandler {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
}

/**
 * The runtime's HTTP server: every request to `handle`, every upgrade through the request guard
 * first (a refused one gets a plain-text answer and the socket closes) and then to `upgrades`.
 */
export function createRuntimeHttpServer(
  config: Readonly<RuntimeConfig>,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  upgrades: UpgradeHandler,
): Server {
  const server = createServer(
    { keepAliveTimeout: 65_000, requestTimeout: 0 },
    (req, res) => void handle(req, res),
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      guardRuntimeRequest(req, config, { upgrade: true });
    } catch (error) {
      const { status, message } = error as RuntimeApiError;
      socket.end(
        `HTTP/1.1 ${status} Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}\n`,
      );
      return;
    }
    void upgrades.handleUpgrade(req, socket, head);
  });
  return server;
}

/** Listens on the configured host and port (0: a free one); rejects when it cannot. */
export async function listenOn(server: Server, config: Readonly<RuntimeConfig>): Promise<ListeningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return { server, port, url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}` };
}
