export { jobWorkflow } from './job-workflow';
export { retentionWorkflow } from './retention-workflow';
export { sweeperWorkflow } from './sweeper-workflow';
export { warmUpWorkflow } from './warm-up-workflow';
