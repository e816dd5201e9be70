import type { BUILT_IN_EFFECTS } from '../effects/built-in';
import type { HttpEffectDeclaration } from '../effects/http-declaration';

/**
 * The fields of the receipts the built-in effects settle with
 * (src/effects/message-send.ts, webhook.ts, record-write.ts; a test holds the
 * adapters to them): what an operation's `result.fields` may take from them.
 */
export const BUILT_IN_RECEIPT_FIELDS: Readonly<Record<(typeof BUILT_IN_EFFECTS)[number], readonly string[]>> = {
  'message.send': ['messageId'],
  'webhook.notify': ['status', 'at'],
  'record.write': ['recordKey', 'writtenAt'],
};

/** What a declared effect's receipt holds when it declares no `receipt:` pointers: the answer's HTTP status. */
const STATUS_ONLY = ['status'];

/**
 * The fields every receipt of a declared HTTP effect has: its `receipt:`
 * names (the status without them), and, when it declares a lookup, only those
 * the receipt its lookup finds has too (`lookup.receipt`, else the same).
 */
export function declaredReceiptFields(declaration: Pick<HttpEffectDeclaration, 'receipt' | 'lookup'>): string[] {
  const performed = declaration.receipt ? Object.keys(declaration.receipt) : STATUS_ONLY;
  if (!declaration.lookup) return performed;
  const found = declaration.lookup.receipt ? Object.keys(declaration.lookup.receipt) : performed;
  return performed.filter((field) => found.includes(field));
}
