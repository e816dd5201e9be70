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

  it('refuse to run when an applied migration was edited', async () => {
    // Arrange
    const edited = readMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'edited' } : m));

    // Act / Assert
    await expect(migrate(db.pool, edited)).rejects.toThrow(/was changed after it was applied/);
  });
});
