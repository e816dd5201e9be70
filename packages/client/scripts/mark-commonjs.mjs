// The package is "type": "module"; its CommonJS build says so of itself, or Node would read it as ES modules.
import { writeFileSync } from 'node:fs';

writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
