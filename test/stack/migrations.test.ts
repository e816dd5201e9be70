import { migrate, readMigrations } from '../../src/db/migrate';
import { createTestDatabase, type TestDatabase } from '../harness/database';

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  it('apply every numbered migration once, and a second run applies nothing', async () => {
    // Arrange
    const all = readMigrations().map((m) => m.name);

    // Act
    const first = await migrate(db.pool);
    const second = await migrate(db.pool);

    // Assert
    expect(first).toEqual(all);
    expect(second).toEqual([]);
    const { rows } = await db.pool.query('SELECT name FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.name)).toEqual(all);
  });

  it('apply each migration once when two processes migrate at the same time', async () => {
    // Arrange
    const fresh = await createTestDatabase({ migrate: false });
    try {
      // Act
      const [a, b] = await Promise.all([migrate(fresh.pool), migrate(fresh.pool)]);

      // Assert
      expect([...a, ...b].sort()).toEqual(readMigrations().map((m) => m.name).sort());
    } finally {
      await fresh.drop();
    }
  });

  it('apply a migration numbered below the last applied one when it arrives later (numbers may have gaps)', async () => {
    // Arrange: everything applied up to a high number, then a migration whose lower number was free (another branch's) arrives.
    const last = { version: 9000, name: '9000_applied_last', sql: 'CREATE TABLE applied_last (id integer)', checksum: 'c9000' };
    const arriving = { version: 8999, name: '8999_arrives_later', sql: 'CREATE TABLE arrives_later (id integer)', checksum: 'c8999' };
    await migrate(db.pool, [...readMigrations(), last]);
    const withIt = [...readMigrations(), arriving, last];

    // Act
    const applied = await migrate(db.pool, withIt);

    // Assert
    expect(applied).toEqual(['8999_arrives_later']);
    expect(await migrate(db.pool, withIt)).toEqual([]);
  });

  it('refuse to run when an applied migration was edited', async () => {
    // Arrange
    const edited = readMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'edited' } : m));

    // Act / Assert
    await expect(migrate(db.pool, edited)).rejects.toThrow(/was changed after it was applied/);
  });
});
