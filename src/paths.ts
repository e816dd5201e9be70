import path from 'node:path';

/** The project's root folder: the same from `src` (tsx, jest) and `dist` (node). */
export const projectRoot = path.resolve(__dirname, '..');

/** Ignored folder for built or fetched tools (Temporal CLI, test-server jars). */
export const toolsDir = path.join(projectRoot, '.tools');

/** Ignored folder for local state: embedded PostgreSQL data, the dev server's database. */
export const dataDir = path.join(projectRoot, '.data');

export const migrationsDir = path.join(projectRoot, 'migrations');

/** The demo operations file and its neighbours. */
export const operationsDir = path.join(projectRoot, 'operations');

/** JSON Schemas Onceflow ships for its own files (the operations file). */
export const schemasDir = path.join(projectRoot, 'schemas');

/** The demo page's files, served at /demo by `npm start`. */
export const demoDir = path.join(projectRoot, 'demo');

/** The client package (packages/client), built to dist/esm and dist/cjs. */
export const clientPackageDir = path.join(projectRoot, 'packages', 'client');
