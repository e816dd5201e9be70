import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from '../api/app';
import { clientPackageDir, demoDir } from '../paths';

export interface DemoOptions {
  /** The key the page submits with (the dev stack's demo key); without one the page asks for a key. */
  apiKey?: string;
  /** The simulated messaging service, whose messages for the ticket the page shows. */
  messagesUrl: string;
}

/**
 * The demo page at /demo: a support-reply form that submits through the
 * client package, which this process serves too (/demo/client/), so nothing
 * comes from elsewhere. `npm start` mounts it on the API it builds; `npm run
 * api` never does. Its routes are left out of the OpenAPI document.
 * @throws Error when the client package is not built.
 */
export function mountDemo(app: App, options: DemoOptions): void {
  const clientDir = path.join(clientPackageDir, 'dist', 'esm');
  let moduleNames: string[];
  try {
    moduleNames = readdirSync(clientDir).filter((name) => name.endsWith('.js'));
  } catch (err) {
    throw new Error(`the client package is not built (${clientDir}): run \`npm run build\``, { cause: err });
  }
  const modules = new Map(moduleNames.map((name) => [name, readFileSync(path.join(clientDir, name))]));
  const page = readFileSync(path.join(demoDir, 'index.html'));
  const script = readFileSync(path.join(demoDir, 'demo.js'));
  const hide = { schema: { hide: true } };

  app.get('/demo', hide, (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
  app.get('/demo/demo.js', hide, (_request, reply) => reply.type('text/javascript; charset=utf-8').send(script));
  app.get('/demo/config.json', hide, () => ({ apiKey: options.apiKey ?? null }));
  app.get<{ Params: { module: string } }>('/demo/client/:module', hide, (request, reply) => {
    const source = modules.get(request.params.module);
    if (!source) return reply.callNotFound();
    return reply.type('text/javascript; charset=utf-8').send(source);
  });
  app.get<{ Querystring: { ticketId?: string } }>('/demo/messages', hide, async (request, reply) => {
    const query = new URLSearchParams(request.query.ticketId === undefined ? {} : { ticketId: request.query.ticketId });
    const answer = await fetch(`${options.messagesUrl.replace(/\/$/, '')}/v1/messages?${query}`);
    return reply.status(answer.status).type('application/json').send(await answer.text());
  });
}
