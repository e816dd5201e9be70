import { DevConfigError, devServerArgs, loadTemporalDevConfig } from '../../src/stack/temporal-dev';

describe('temporal-dev.yaml and its environment overrides', () => {
  it('turns the Web UI off with TEMPORAL_UI=0: the server runs headless', () => {
    // Act
    const config = loadTemporalDevConfig(undefined, { TEMPORAL_UI: '0' });

    // Assert
    expect(config.ui).toBe(false);
    expect(devServerArgs(config)).toContain('--headless');
    expect(devServerArgs(config)).not.toContain('--ui-port');
  });

  it('serves the Web UI as temporal-dev.yaml says when TEMPORAL_UI is unset', () => {
    // Act
    const config = loadTemporalDevConfig(undefined, {});

    // Assert
    expect(config.ui).toBe(true);
    expect(devServerArgs(config)).toEqual(expect.arrayContaining(['--ui-port', String(config.uiPort)]));
  });

  it('rejects a TEMPORAL_UI that is neither on nor off, naming the variable', () => {
    // Act / Assert
    expect(() => loadTemporalDevConfig(undefined, { TEMPORAL_UI: 'maybe' })).toThrow(DevConfigError);
    expect(() => loadTemporalDevConfig(undefined, { TEMPORAL_UI: 'maybe' })).toThrow('TEMPORAL_UI');
  });
});
