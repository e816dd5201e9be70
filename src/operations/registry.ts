import { registerOperation, type OperationDefinition, type RegisteredOperation } from './operation';
import { supportReply } from './support-reply';

/** Every operation Onceflow knows, by name. */
export type OperationRegistry = ReadonlyMap<string, RegisteredOperation>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each operation has its own schema types
export function createRegistry(definitions: ReadonlyArray<OperationDefinition<any, any>> = [supportReply]): OperationRegistry {
  return new Map(definitions.map((definition) => [definition.name, registerOperation(definition)]));
}
