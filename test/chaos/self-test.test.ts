import { selfTestResults } from '../../chaos/self-test';

describe('the chaos suite', () => {
  it('has checks that each fire on a fabricated violation, and reproducible draws that cover the catalogue', () => {
    // Arrange, Act
    const results = selfTestResults();
    // Assert
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.length).toBeGreaterThan(30);
  });
});
