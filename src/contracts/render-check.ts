import type { OperationDefinition } from '../operations/operation';
import type { ChatMessage } from '../providers/types';
import { countPromptTokens, profileOf, promptTokenBound, type ModelProfile } from './models';
import { PromptRenderError, renderPrompt, templateHash } from './prompt';

export interface RenderCheck {
  ok: boolean;
  templateHash: string;
  promptTokens?: number;
  budgetTokens: number;
  problems: string[];
  messages?: ChatMessage[];
}

/**
 * Renders the operation's prompt for a model and checks it: every placeholder
 * filled, and the prompt within the model's context window (less the room kept
 * for the answer) by that model's tokenizer. With `to-decide`, a prompt whose
 * bytes alone prove that it fits (promptTokenBound) is not counted: its
 * promptTokens is absent, and the answer is the same.
 */
export function checkRender(
  operation: Pick<OperationDefinition, 'name' | 'schemaVersion' | 'prompt' | 'alias'>,
  model: string,
  input: Record<string, unknown>,
  profile: ModelProfile = profileOf(model),
  /** `exact`: promptTokens is always the count; `to-decide`: only when the bytes cannot decide. */
  count: 'exact' | 'to-decide' = 'exact',
): RenderCheck {
  const hash = templateHash(operation);
  const budgetTokens = profile.contextWindow - profile.reservedForOutput;
  let messages: ChatMessage[];
  try {
    messages = renderPrompt(operation, input);
  } catch (err) {
    if (!(err instanceof PromptRenderError)) throw err;
    return { ok: false, templateHash: hash, budgetTokens, problems: [err.message] };
  }
  if (count === 'to-decide' && promptTokenBound(messages) <= budgetTokens) return { ok: true, templateHash: hash, budgetTokens, problems: [], messages };
  const promptTokens = countPromptTokens(messages, profile.encoding);
  const problems = promptTokens > budgetTokens ? [`the prompt is ${promptTokens} tokens; ${model} takes ${budgetTokens} (a ${profile.contextWindow}-token window less ${profile.reservedForOutput} for the answer)`] : [];
  return { ok: problems.length === 0, templateHash: hash, promptTokens, budgetTokens, problems, messages };
}
