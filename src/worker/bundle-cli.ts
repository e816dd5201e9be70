/** `npm run build` runs this after tsc: it bundles the compiled workflows into dist/workflow-bundle.js. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_FILE } from './bundle';

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') });
  const file = path.join(__dirname, '..', WORKFLOW_BUNDLE_FILE);
  writeFileSync(file, code);
  console.log(`workflow bundle: ${path.relative(process.cwd(), file)} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(`bundle: ${(err as Error).message ?? String(err)}`);
  process.exit(1);
});
