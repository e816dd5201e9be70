import path from 'node:path';

/** The committed histories of the replay gate. */
export const COMMITTED_HISTORIES_DIR = path.join(__dirname, 'histories');
