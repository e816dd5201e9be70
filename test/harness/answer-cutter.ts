/**
 * A fetch for an SDK client that records the status of every answer it got
 * and can drop the next answers after the server sent them: the SDK then
 * sees a reset connection, as when the network fails on the way back, and
 * retries with the same headers.
 */
export interface AnswerCutter {
  /** Each answer's status, in order; 'cut' for one dropped on the way back. */
  readonly statuses: Array<number | 'cut'>;
  /** Drop the next `count` answers. */
  cutNext(count: number): void;
  /** Forget the statuses and the cuts still to make. */
  clear(): void;
  fetch(url: string | URL | Request, init?: RequestInit): Promise<Response>;
}

export function answerCutter(): AnswerCutter {
  const statuses: Array<number | 'cut'> = [];
  let toCut = 0;
  return {
    statuses,
    cutNext: (count) => void (toCut = count),
    clear: () => {
      statuses.length = 0;
      toCut = 0;
    },
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      if (toCut > 0) {
        toCut--;
        await response.arrayBuffer();
        statuses.push('cut');
        throw new TypeError('fetch failed: the connection was reset');
      }
      statuses.push(response.status);
      return response;
    },
  };
}
