import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestStack, type TestStack } from '../harness/stack';
import { codeSpans, ROOT, section, tableRows } from './markdown';

/**
 * docs/api.md is the contract users have: its route list is exactly the
 * routes of the OpenAPI document the server serves, no more and no fewer.
 */
describe('the route list of docs/api.md', () => {
  let stack: TestStack;
  let served: string[];
  let statuses: Map<string, string[]>;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    const doc = (await stack.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const operations = Object.entries(doc.paths).flatMap(([route, methods]) => Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${route}`, operation] as const));
    served = operations.map(([route]) => route);
    statuses = new Map(operations.map(([route, operation]) => [route, Object.keys(operation.responses).sort()]));
  });
  afterAll(() => stack.close());

  /** The rows of the table under "## Routes": `METHOD /path` | who | the statuses it answers. */
  const rows = tableRows(section(readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8'), 'Routes'))
    .map((cells) => ({ route: codeSpans(cells[0] ?? '')[0], answers: (cells[2] ?? '').split(/[,\s]+/).filter(Boolean).sort() }))
    .filter((row): row is { route: string; answers: string[] } => row.route !== undefined && /^[A-Z]+ \//.test(row.route));
  const documented = rows.map((row) => row.route);

  it('lists routes at all', () => {
    // Assert: a parser that finds nothing would pass everything below.
    expect(documented.length).toBeGreaterThan(10);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('lists every route the OpenAPI document has', () => {
    // Assert
    expect(served.filter((route) => !documented.includes(route))).toEqual([]);
  });

  it('lists no route the OpenAPI document does not have', () => {
    // Assert
    expect(documented.filter((route) => !served.includes(route))).toEqual([]);
  });

  it('gives each route the statuses the OpenAPI document lists for it', () => {
    // Assert
    for (const row of rows.filter((r) => statuses.has(r.route))) expect({ route: row.route, answers: row.answers }).toEqual({ route: row.route, answers: statuses.get(row.route) });
  });
});
