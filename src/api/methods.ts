import type { FastifyInstance, RouteOptions } from 'fastify';

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

/**
 * Which methods each known path answers, so a request for a known path with
 * another method is a 405 with `Allow` (RFC 9110), and only an unknown path
 * is a 404. Learns the routes as they are registered.
 */
export class RouteMethods {
  private readonly paths = new Map<string, KnownPath>();

  constructor(app: FastifyInstance) {
    app.addHook('onRoute', (route: RouteOptions) => this.add(route));
  }

  private add(route: RouteOptions): void {
    const url = route.url;
    if (!url) return;
    const known = this.paths.get(url) ?? { pattern: patternOf(url), methods: new Set<string>() };
    for (const method of [route.method].flat()) known.methods.add(method.toUpperCase());
    this.paths.set(url, known);
  }

  /** The methods allowed on a request path (without its query), or undefined when no route has that path. */
  allowed(path: string): string[] | undefined {
    const methods = new Set<string>();
    for (const known of this.paths.values()) {
      if (known.pattern.test(path)) known.methods.forEach((method) => methods.add(method));
    }
    return methods.size > 0 ? [...methods].sort() : undefined;
  }
}

/** A route URL (`/v1/jobs/:id`, `/docs/*`) as a regular expression over request paths. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}
