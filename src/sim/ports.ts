/** Which simulator a port belongs to, so errors can name the setting to change. */
export type SimRole = 'primary' | 'backup' | 'downstream';

/**
 * The environment variable that sets each simulator's port, and its default.
 * `npm run sim` listens there, and the built-in providers and messaging URL
 * (src/config.ts) call there, so moving a port moves both.
 */
export const SIM_PORT_ENV: Readonly<Record<SimRole, { name: string; defaultPort: number }>> = {
  primary: { name: 'SIM_PRIMARY_PORT', defaultPort: 7301 },
  backup: { name: 'SIM_BACKUP_PORT', defaultPort: 7302 },
  downstream: { name: 'SIM_DOWNSTREAM_PORT', defaultPort: 7310 },
};
