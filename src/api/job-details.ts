import type { Pool } from 'pg';
import type { AttemptView, EffectView } from './job-view';

/** A job's attempts and effects as the API shows them. */
export async function loadJobDetails(_db: Pool, _jobId: string): Promise<{ attempts: AttemptView[]; effects: EffectView[] }> {
  return { attempts: [], effects: [] };
}
