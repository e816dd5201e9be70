import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveTemporalServer, ToolError } from '../../src/stack/tools';

/**
 * Where Temporal's own server (the production-shaped Temporal of
 * `npm run bench -- --temporal postgres`) comes from: an explicit path
 * first, then PATH, each with the schemas it needs named.
 */
describe("resolving Temporal's server and its SQL tool", () => {
  let dir: string;
  const executable = (name: string): string => {
    const file = path.join(dir, 'bin', name);
    writeFileSync(file, '#!/bin/sh\nexit 0\n');
    chmodSync(file, 0o755);
    return file;
  };
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-temporal-server-'));
    mkdirSync(path.join(dir, 'bin'));
    mkdirSync(path.join(dir, 'schema', 'temporal', 'versioned'), { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the explicit paths first, over a server on PATH', async () => {
    // Arrange
    const server = executable('temporal-server');
    const sqlTool = executable('temporal-sql-tool');
    const env = { PATH: path.join(dir, 'bin'), TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool, TEMPORAL_SCHEMA_DIR: path.join(dir, 'schema') };

    // Act
    const found = await resolveTemporalServer({ build: false, env });

    // Assert
    expect(found).toEqual({ server, sqlTool, schemaDir: path.join(dir, 'schema'), source: 'env' });
  });

  it('finds both on PATH when the schemas are named', async () => {
    // Arrange
    const server = executable('temporal-server');
    const sqlTool = executable('temporal-sql-tool');

    // Act
    const found = await resolveTemporalServer({ build: false, env: { PATH: path.join(dir, 'bin'), TEMPORAL_SCHEMA_DIR: path.join(dir, 'schema') } });

    // Assert
    expect(found).toEqual({ server, sqlTool, schemaDir: path.join(dir, 'schema'), source: 'path' });
  });

  it('does not take a server on PATH whose schemas are not named', async () => {
    // Arrange
    executable('temporal-server');
    executable('temporal-sql-tool');

    // Act
    const found = await resolveTemporalServer({ build: false, env: { PATH: path.join(dir, 'bin') } });

    // Assert: the cached build, if this checkout has one, or nothing
    expect(found?.source).not.toBe('path');
  });

  it('refuses an explicit server without its SQL tool, or without schemas, naming what is missing', async () => {
    // Arrange
    const server = executable('temporal-server');
    const sqlTool = executable('temporal-sql-tool');

    // Act, Assert
    await expect(resolveTemporalServer({ build: false, env: { PATH: '', TEMPORAL_SERVER_PATH: server, TEMPORAL_SCHEMA_DIR: path.join(dir, 'schema') } })).rejects.toThrow(new ToolError('TEMPORAL_SERVER_PATH is set, but TEMPORAL_SQL_TOOL_PATH is not: name the temporal-sql-tool beside it'));
    await expect(resolveTemporalServer({ build: false, env: { PATH: '', TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool } })).rejects.toThrow(/TEMPORAL_SCHEMA_DIR is not/);
    await expect(resolveTemporalServer({ build: false, env: { PATH: '', TEMPORAL_SERVER_PATH: server, TEMPORAL_SQL_TOOL_PATH: sqlTool, TEMPORAL_SCHEMA_DIR: dir } })).rejects.toThrow(/has no temporal\/versioned folder/);
  });

  it('refuses a TEMPORAL_SERVER_PATH that is not an executable file', async () => {
    // Act, Assert
    await expect(resolveTemporalServer({ build: false, env: { PATH: '', TEMPORAL_SERVER_PATH: path.join(dir, 'nothing') } })).rejects.toThrow(/TEMPORAL_SERVER_PATH=.* is not an executable file/);
  });
});
