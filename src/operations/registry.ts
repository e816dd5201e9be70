import { registerOperation, type RegisteredOperation } from './operation';
import { supportReply } from './support-reply';

/** Every operation Onceflow knows, by name. */
export type OperationRegistry = ReadonlyMap<string, RegisteredOperation>;

export function createRegistry(definitions = [supportReply]): OperationRegistry {
  return new Map(definitions.map((definition) => [definition.name, registerOperation(definition)]));
}
