/** The effects Onceflow ships adapters for (src/effects/registry.ts); an operations file may declare HTTP effects beside them. */
export const BUILT_IN_EFFECTS = ['message.send', 'webhook.notify', 'record.write'] as const;
