import { coresdk, temporal } from '@temporalio/proto';
import { JOB_WORKFLOW, searchAttributes } from './contract';

/*
 * protobufjs builds a message type's encoder, decoder and converters the
 * first time the type is used, about a millisecond each; a type that only a
 * job uses would be built on the first job. Each process takes the messages
 * of a job's way through their first use before it says it is ready, with
 * the fields a real one carries (a nested type is built only when a message
 * holds it). Everything is encoded and decoded here, in the process; nothing
 * reaches the server. test/stack/warm-up-codecs.test.ts runs the API and the
 * worker as processes of their own and fails on any type a job then builds.
 */

const PAYLOAD = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{}') };

/** The API's: a job workflow's start, and the server's answer with the link to the started (or attached) run. */
export function warmUpStartMessages(): void {
  const { StartWorkflowExecutionRequest: Request, StartWorkflowExecutionResponse: Response } = temporal.api.workflowservice.v1;
  const { enums } = temporal.api;
  const request = Request.fromObject({
    namespace: 'warm-up',
    identity: 'warm-up',
    requestId: 'warm-up',
    workflowId: 'warm-up',
    workflowIdReusePolicy: enums.v1.WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
    workflowIdConflictPolicy: enums.v1.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
    workflowType: { name: JOB_WORKFLOW },
    input: { payloads: [PAYLOAD] },
    taskQueue: { kind: enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL, name: 'warm-up' },
    workflowTaskTimeout: { seconds: 10 },
    searchAttributes: { indexedFields: { [searchAttributes.principal.name]: PAYLOAD } },
    header: { fields: {} },
  });
  Request.toObject(Request.decode(Request.encode(request).finish()));
  const run = { namespace: 'warm-up', workflowId: 'warm-up', runId: 'warm-up' };
  const eventType = enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
  // A new run's link names its started event; an attached one's, the request.
  for (const reference of [{ eventRef: { eventId: 1, eventType } }, { requestIdRef: { requestId: 'warm-up', eventType } }]) {
    const response = Response.fromObject({ runId: 'warm-up', started: true, status: enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING, link: { workflowEvent: { ...run, ...reference } } });
    Response.toObject(Response.decode(Response.encode(response).finish()));
  }
}

/**
 * The worker's: a job workflow's first activation as the worker's main
 * thread decodes it, with the search attributes the job's start gave it
 * (the warm-up workflow's own start has none).
 */
export function warmUpActivationMessages(): void {
  const { WorkflowActivation: Activation } = coresdk.workflow_activation;
  const activation = Activation.fromObject({
    runId: 'warm-up',
    jobs: [{ initializeWorkflow: { workflowType: JOB_WORKFLOW, workflowId: 'warm-up', arguments: [PAYLOAD], searchAttributes: { indexedFields: { [searchAttributes.principal.name]: PAYLOAD } } } }],
  });
  Activation.toObject(Activation.decode(Activation.encode(activation).finish()));
}
