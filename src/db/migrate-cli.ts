/** `npm run migrate`: applies pending migrations to DATABASE_URL. */
import { runMain } from '../process/run-main';
import { migrate } from './migrate';
import { assertReachable, createPool } from './pool';

runMain('migrate', async () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set');
  const db = createPool(url);
  await assertReachable(db, url);
  const applied = await migrate(db);
  console.log(applied.length ? `migrate: applied ${applied.join(', ')}` : 'migrate: nothing to apply');
  await db.end();
  process.exit(0);
});
