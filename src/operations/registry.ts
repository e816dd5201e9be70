import { demoOperations } from './load';
import { registerOperation, type OperationDefinition, type RegisteredOperation } from './operation';

/** Every operation Onceflow knows, by name. */
export type OperationRegistry = ReadonlyMap<string, RegisteredOperation>;

/**
 * A registry of these definitions; without any, the demo file's operations
 * (operations/demo.yaml). A deployment's own come from loadOperations.
 * @throws OperationsFileError when the demo file is broken.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each operation has its own schema types
export function createRegistry(definitions?: ReadonlyArray<OperationDefinition<any, any>>): OperationRegistry {
  if (!definitions) return new Map(demoOperations().registry);
  return new Map(definitions.map((definition) => [definition.name, registerOperation(definition)]));
}

/** The demo file's operations. */
export function demoRegistry(): OperationRegistry {
  return createRegistry();
}
