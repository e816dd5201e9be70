import { coresdk, temporal } from '@temporalio/proto';
import { Type } from 'protobufjs';
import { JOB_WORKFLOW, searchAttributes } from './contract';

/*
 * protobufjs builds a message type's encoder, decoder and converters the
 * first time the type is used, about a millisecond each; a type that only a
 * job uses would be built on the first job. Each process builds the types
 * of a job's way before it says it is ready: the API by taking its messages
 * through an encode and a decode, with the fields a real one carries (a
 * nested type is built only when a message holds it), the worker all of its
 * types at once. Nothing reaches the server. test/stack/warm-up-codecs.test.ts runs the API and the
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
 * The worker's: every message type its main thread decodes and encodes
 * between the SDK's core and its workflows and activities (the activations
 * and their completions, the activity tasks and theirs, and each type they
 * can hold), built at start. Some only a job's later way uses (a scheduled
 * activity, a timer, a signal, a workflow evicted from the cache), and the
 * warm-up workflow's own activation carries none of them.
 */
export function warmUpActivationMessages(): void {
  const { workflow_activation, workflow_completion, activity_task, activity_result } = coresdk;
  const built = new Set<Type>();
  for (const root of [workflow_activation.WorkflowActivation, workflow_completion.WorkflowActivationCompletion, activity_task.ActivityTask, coresdk.ActivityTaskCompletion, activity_result.ActivityExecutionResult]) {
    buildCodecs(root as unknown as Type, built);
  }
}

/** Builds the codecs of `type` and of every message type its fields can hold. */
function buildCodecs(type: Type, built: Set<Type>): void {
  if (built.has(type)) return;
  built.add(type);
  type.setup();
  for (const field of type.fieldsArray) {
    const held = field.resolve().resolvedType;
    if (held instanceof Type) buildCodecs(held, built);
  }
}
