/**
 * `onceflow keys create --principal NAME [--role tenant|operator] [--json]`
 * `onceflow keys list [--json]`
 * `onceflow keys revoke ID [--json]`
 *
 * API keys in the database at DATABASE_URL (else the one of the stack
 * `npm start` runs in this checkout). A created key is printed once;
 * only the hash of its secret is kept. A revoked key is refused from the
 * API's next request on.
 */
import { parseArgs } from 'node:util';
import { migrate } from '../db/migrate';
import { assertReachable, createPool } from '../db/pool';
import { KEY_ID_PATTERN, KeyRole } from '../keys/api-key';
import { ApiKeyError, createApiKey, listApiKeys, revokeApiKey, type ApiKeyRecord } from '../ledger/api-keys';
import { ExitCode, table, UsageError, when, type CliIo } from './io';
import { readStackFile, stackFilePath } from '../stack/stack-file';

export const KEYS_USAGE = `usage: onceflow keys create --principal NAME [--role tenant|operator] [--json]
       onceflow keys list [--json]
       onceflow keys revoke ID [--json]`;

const asJson = (record: ApiKeyRecord) => ({
  id: record.id,
  principal: record.principal,
  role: record.role,
  createdAt: record.createdAt.toISOString(),
  lastUsedAt: record.lastUsedAt?.toISOString() ?? null,
  revokedAt: record.revokedAt?.toISOString() ?? null,
});

/** @throws UsageError on a bad command line (exit 2). */
export async function keysCommand(command: string | undefined, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { principal: { type: 'string' }, role: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  const role = values.role ?? KeyRole.tenant;
  if (command === 'create') {
    if (!values.principal?.trim()) throw new UsageError('keys create needs --principal NAME');
    if (role !== KeyRole.tenant && role !== KeyRole.operator) throw new UsageError('--role is tenant or operator');
    if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')}`);
  } else if (command === 'list') {
    if (positionals.length > 0 || values.principal !== undefined || values.role !== undefined) throw new UsageError('keys list takes only --json');
  } else if (command === 'revoke') {
    if (positionals.length !== 1 || !KEY_ID_PATTERN.test(positionals[0]!)) throw new UsageError('keys revoke needs one key ID (12 letters and digits, as keys list shows it)');
  } else {
    throw new UsageError(`unknown command keys ${command ?? ''}`.trim());
  }

  // On the dev stack, its database: npm start says where it is (stack-file.ts).
  const databaseUrl = io.env.DATABASE_URL || readStackFile(stackFilePath(io.env))?.databaseUrl;
  if (!databaseUrl) throw new UsageError('DATABASE_URL is not set, and no stack started by npm start is running in this checkout (it writes .data/stack.json): set DATABASE_URL to the database the API uses');
  const db = createPool(databaseUrl, { max: 1 });
  try {
    await assertReachable(db, databaseUrl);
    await migrate(db);
    if (command === 'create') {
      let created;
      try {
        created = await createApiKey(db, { principal: values.principal!, role: role as KeyRole });
      } catch (err) {
        if (err instanceof ApiKeyError) throw new UsageError(err.message);
        throw err;
      }
      if (values.json) io.out(JSON.stringify({ key: created.key, ...asJson(created.record) }));
      else {
        io.out(table([
          ['key', created.key],
          ['id', created.record.id],
          ['principal', created.record.principal],
          ['role', created.record.role],
        ]));
      }
      io.err('Keep the key now: it is not shown again (only the hash of its secret is stored).');
      return ExitCode.ok;
    }
    if (command === 'list') {
      const keys = await listApiKeys(db);
      if (values.json) io.out(JSON.stringify(keys.map(asJson)));
      else io.out(table([['ID', 'PRINCIPAL', 'ROLE', 'CREATED', 'LAST USED', 'REVOKED'], ...keys.map((k) => [k.id, k.principal, k.role, when(k.createdAt), when(k.lastUsedAt), when(k.revokedAt)])]));
      return ExitCode.ok;
    }
    const revoked = await revokeApiKey(db, positionals[0]!);
    if (!revoked) {
      io.err(`onceflow: no key ${positionals[0]}`);
      return ExitCode.refused;
    }
    if (values.json) io.out(JSON.stringify(asJson(revoked)));
    else io.out(`revoked ${revoked.id} (${revoked.principal}, ${revoked.role}) at ${when(revoked.revokedAt)}`);
    return ExitCode.ok;
  } finally {
    await db.end();
  }
}
