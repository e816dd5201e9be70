export default async function globalTeardown(): Promise<void> {
  const stops = (globalThis as { __onceflowStops?: Array<() => Promise<void>> }).__onceflowStops ?? [];
  await Promise.allSettled(stops.map((stop) => stop()));
}
