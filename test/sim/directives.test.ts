import {
  findSinkDirectives,
  parseSimDirectives,
  simBehaviourFor,
  sinkBehaviourFor,
} from '../../src/sim/directives';

describe('@sim directives', () => {
  it.each([
    ['ok', { kind: 'ok' }],
    ['delay=150', { kind: 'delay', ms: 150 }],
    ['hang', { kind: 'hang' }],
    ['late=2000', { kind: 'late', ms: 2000 }],
    ['status=503', { kind: 'status', code: 503 }],
    ['refuse', { kind: 'refuse' }],
    ['reset', { kind: 'reset' }],
    ['extra-key', { kind: 'extra-key' }],
    ['prose', { kind: 'prose' }],
  ])('parses the behaviour %s', (source, expected) => {
    // Act
    const behaviour = simBehaviourFor('sim-primary', `Hello @sim(sim-primary:${source}) there`);

    // Assert
    expect(behaviour).toEqual(expected);
  });

  it.each([
    ['status=429,retry-after=2', { kind: 'status', code: 429, retryAfterS: 2 }],
    ['status=429, Retry-After=0', { kind: 'status', code: 429, retryAfterS: 0 }],
    ['status=503,retry-after=30', { kind: 'status', code: 503, retryAfterS: 30 }],
  ])('parses the behaviour %s with its chosen Retry-After', (source, expected) => {
    // Act
    const behaviour = simBehaviourFor('sim-primary', `Hello @sim(sim-primary:${source}) there`);

    // Assert
    expect(behaviour).toEqual(expected);
  });

  it('keeps status=429 without a Retry-After as it was', () => {
    expect(simBehaviourFor('sim-backup', '@sim(sim-backup:status=429)')).toEqual({ kind: 'status', code: 429 });
  });

  it('applies a directive only to the provider it names', () => {
    // Arrange
    const text = 'Where is my order? @sim(sim-primary:hang)';

    // Act / Assert
    expect(simBehaviourFor('sim-primary', text)).toEqual({ kind: 'hang' });
    expect(simBehaviourFor('sim-backup', text)).toEqual({ kind: 'ok' });
  });

  it('applies a * directive to every provider', () => {
    // Arrange
    const text = '@sim(*:status=429)';

    // Act / Assert
    expect(simBehaviourFor('sim-primary', text)).toEqual({ kind: 'status', code: 429 });
    expect(simBehaviourFor('sim-backup', text)).toEqual({ kind: 'status', code: 429 });
  });

  it('prefers a directive naming the provider over * wherever it appears', () => {
    // Arrange
    const text = '@sim(*:hang) @sim(sim-backup:ok) @sim(sim-primary:reset)';

    // Act / Assert
    expect(simBehaviourFor('sim-primary', text)).toEqual({ kind: 'reset' });
    expect(simBehaviourFor('sim-backup', text)).toEqual({ kind: 'ok' });
    expect(simBehaviourFor('sim-other', text)).toEqual({ kind: 'hang' });
  });

  it('lets the first of several directives for one provider win', () => {
    // Act
    const behaviour = simBehaviourFor('sim-primary', '@sim(sim-primary:prose)\n@sim(sim-primary:hang)');

    // Assert
    expect(behaviour).toEqual({ kind: 'prose' });
  });

  it('matches provider names and keywords regardless of case', () => {
    // Act
    const behaviour = simBehaviourFor('sim-primary', '@sim(SIM-Primary:Status=502)');

    // Assert
    expect(behaviour).toEqual({ kind: 'status', code: 502 });
  });

  it.each(['explode', 'delay=soon', 'delay=-5', 'status=42', 'status=1000', 'hang=5', '', 'status=429,retry-after=soon', 'status=429,retry-after=-1', 'status=429,wait=2', 'status=429,retry-after=1,retry-after=2'])(
    'ignores the unknown or malformed behaviour "%s" and falls through to the next directive',
    (source) => {
      // Arrange
      const text = `@sim(sim-primary:${source}) @sim(*:hang)`;

      // Act
      const behaviour = simBehaviourFor('sim-primary', text);

      // Assert
      expect(behaviour).toEqual({ kind: 'hang' });
    },
  );

  it('answers ok when there is no directive at all', () => {
    expect(simBehaviourFor('sim-primary', 'My parcel never arrived.')).toEqual({ kind: 'ok' });
  });

  it('keeps each well-formed directive with its raw text, in order', () => {
    // Act
    const directives = parseSimDirectives('a @sim(sim-primary:late=10) b @sim(nope) c @sim(*:prose)');

    // Assert
    expect(directives).toEqual([
      { provider: 'sim-primary', behaviour: { kind: 'late', ms: 10 }, raw: '@sim(sim-primary:late=10)' },
      { provider: '*', behaviour: { kind: 'prose' }, raw: '@sim(*:prose)' },
    ]);
  });
});

describe('@sink directives', () => {
  it.each([
    ['reset', { kind: 'reset' }],
    ['status=503', { kind: 'status', code: 503 }],
    ['delay=80', { kind: 'delay', ms: 80 }],
    ['reset-once', { kind: 'reset-once' }],
  ])('parses the behaviour %s', (source, expected) => {
    expect(sinkBehaviourFor(`We refunded you. @sink(${source})`)).toEqual(expected);
  });

  it('uses the first known directive and skips unknown ones', () => {
    expect(sinkBehaviourFor('@sink(melt) @sink(reset-once) @sink(reset)')).toEqual({ kind: 'reset-once' });
  });

  it('answers ok when there is no directive', () => {
    expect(sinkBehaviourFor('plain text @sim(*:hang)')).toEqual({ kind: 'ok' });
  });

  it('finds every raw @sink directive verbatim, known or not, in text order', () => {
    // Act
    const raw = findSinkDirectives('x @sink(status=503) y @sim(*:hang) @sink(Melt)\n@sink(reset)');

    // Assert
    expect(raw).toEqual(['@sink(status=503)', '@sink(Melt)', '@sink(reset)']);
  });
});
