/** An HTTP status code ("409") or a class of them ("4xx"). */
const STATUS_ENTRY = /^[1-5]([0-9][0-9]|xx)$/;

/**
 * Builds a lookup from HTTP status to the declared list it is in: an exact
 * code wins over a range; a status in no list gives undefined (the caller's
 * default).
 * @throws the error `invalid(problem)` makes, for an entry that is not a code
 * or range, or one that stands in two lists.
 */
export function statusLists<K extends string>(lists: Partial<Record<K, readonly string[]>>, invalid: (problem: string) => Error, label = 'statuses'): (status: number) => K | undefined {
  const exact = new Map<number, K>();
  const ranges = new Map<number, K>();
  for (const [list, entries] of Object.entries(lists) as Array<[K, readonly string[] | undefined]>) {
    for (const raw of entries ?? []) {
      const entry = String(raw).trim().toLowerCase();
      if (!STATUS_ENTRY.test(entry)) throw invalid(`status "${String(raw)}" in ${label}.${list} is neither a code (e.g. 409) nor a range (e.g. 4xx)`);
      const [table, at] = entry.endsWith('xx') ? [ranges, Number(entry[0])] : [exact, Number(entry)];
      const other = table.get(at);
      if (other !== undefined && other !== list) throw invalid(`status ${entry} is in both ${label}.${other} and ${label}.${list}`);
      table.set(at, list);
    }
  }
  return (status) => exact.get(status) ?? ranges.get(Math.floor(status / 100));
}
