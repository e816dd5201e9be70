import { createHash } from 'node:crypto';
import { aliasMessages } from '../operations/alias';
import type { OperationDefinition } from '../operations/operation';
import type { ChatMessage } from '../providers/types';

/** A template that cannot be rendered for this input (an unfilled placeholder). */
export class PromptRenderError extends Error {
  override name = 'PromptRenderError';
  constructor(readonly placeholders: string[]) {
    super(`the prompt template has unfilled placeholders: ${placeholders.map((p) => `{{${p}}}`).join(', ')}`);
  }
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The input fields a prompt template names, in order of first use. */
export function promptPlaceholders(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((match) => match[1]!))];
}

/**
 * The hash of an operation's prompt template and output contract version: a
 * provider verification holds only for the hash it was made with.
 */
export function templateHash(operation: Pick<OperationDefinition, 'prompt' | 'schemaVersion' | 'name'>): string {
  const { name, schemaVersion, prompt } = operation;
  const known = hashes.get(operation);
  // Kept per operation object, and only while what it hashes is unchanged (an object edited in place is hashed again).
  if (known && known.name === name && known.schemaVersion === schemaVersion && known.system === prompt.system && known.user === prompt.user) return known.hash;
  const hash = `sha256:${createHash('sha256').update(JSON.stringify([name, schemaVersion, prompt.system, prompt.user])).digest('hex')}`;
  hashes.set(operation, { name, schemaVersion, system: prompt.system, user: prompt.user, hash });
  return hash;
}

/** Each operation's template hash with what it was taken of (every job's opening and eligibility ask for it). */
const hashes = new WeakMap<object, { name: string; schemaVersion: number; system: string; user: string; hash: string }>();

/**
 * Renders the operation's prompt for an input: `{{field}}` takes the input's
 * string value. Values are inserted once, never re-scanned, so a customer's
 * text containing `{{x}}` is kept as text.
 * @throws PromptRenderError naming every placeholder the input cannot fill.
 */
export function renderPrompt(operation: Pick<OperationDefinition, 'prompt' | 'alias'>, input: Record<string, unknown>): ChatMessage[] {
  // An alias has no template: its job's conversation is the prompt.
  if (operation.alias) return aliasMessages(input);
  const missing = new Set<string>();
  const fill = (template: string): string =>
    template.replace(PLACEHOLDER, (_match, name: string) => {
      const value = input[name];
      if (value === undefined || value === null || typeof value === 'object') {
        missing.add(name);
        return '';
      }
      return String(value);
    });
  const messages: ChatMessage[] = [
    { role: 'system', content: fill(operation.prompt.system) },
    { role: 'user', content: fill(operation.prompt.user) },
  ];
  if (missing.size > 0) throw new PromptRenderError([...missing]);
  return messages;
}
