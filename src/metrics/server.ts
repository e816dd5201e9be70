import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** Where Prometheus scrapes: http://host:port/metrics (the bound port, also for port 0). */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves one registry at GET /metrics (404 elsewhere), for a part that has no
 * HTTP server of its own: the worker.
 * @throws Error naming `setting` when the port is busy.
 */
export async function serveMetrics(registry: Registry, host: string, port: number, setting: string): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') return void response.writeHead(404).end();
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'EADDRINUSE' ? `port ${port} on ${host} is busy; set ${setting}` : `cannot serve metrics on ${host}:${port}: ${err.message}`)),
    );
    server.listen(port, host, resolve);
  });
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
