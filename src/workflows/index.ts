export { jobWorkflow } from './job-workflow';
export { retentionWorkflow } from './retention-workflow';
export { sweeperWorkflow } from './sweeper-workflow';
