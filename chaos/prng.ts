/**
 * A small seeded PRNG (sfc32, seeded through splitmix32). Every trial draws
 * from its own stream, derived from the run's seed and the trial's number
 * alone, so `--seed S --trial T` draws exactly what trial T drew in the run.
 */
export interface Prng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** One of the items, each with its weight. */
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T;
}

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A PRNG whose whole sequence is fixed by `seed` (any 32-bit integer). */
export function createPrng(seed: number): Prng {
  const mix = splitmix32(seed);
  let a = mix();
  let b = mix();
  let c = mix();
  let d = mix();
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4_294_967_296;
  };
  for (let i = 0; i < 12; i++) next();
  const prng: Prng = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)]!;
    },
    weighted: (items) => {
      const total = items.reduce((sum, [, weight]) => sum + weight, 0);
      let roll = next() * total;
      for (const [item, weight] of items) {
        roll -= weight;
        if (roll < 0) return item;
      }
      return items[items.length - 1]![0];
    },
  };
  return prng;
}

/** The seed of trial `trial` of a run seeded with `runSeed`: independent of every other trial. */
export function trialSeed(runSeed: number, trial: number): number {
  const mix = splitmix32((runSeed >>> 0) ^ Math.imul(trial + 1, 0x27d4eb2d));
  mix();
  return mix();
}
