import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './paths';

/** Onceflow's own version (package.json), read at run time so the build's rootDir stays src. */
export const ONCEFLOW_VERSION: string = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
