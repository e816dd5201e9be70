import { entriesSelfTestResults } from '../../chaos/entries/self-test';

describe("the chaos suite's entries round", () => {
  it('has checks that each fire on a fabricated violation, stay quiet when excused, and reproducible draws that cover its catalogue', () => {
    // Arrange, Act
    const results = entriesSelfTestResults();

    // Assert
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.length).toBeGreaterThan(30);
  });
});
