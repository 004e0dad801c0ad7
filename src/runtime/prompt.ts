import type { Run, SystemEvent } from '../store/types.js';
import { wrapExternalContent } from './external-content.js';

/**
 * The user message of an agent run: the hook's message inside the external-content wrapper (unless the mapping
 * allowed unsafe content), then the current time. Wake text and summaries are trusted and never pass here.
 */
export function runPrompt(run: Pick<Run, 'id' | 'name' | 'message' | 'allowUnsafeExternalContent' | 'contentSource' | 'createdAt'>, now: Date): string {
  const body = run.allowUnsafeExternalContent
    ? run.message
    : wrapExternalContent(run.message, { source: run.contentSource, taskName: run.name, runId: run.id, receivedAt: new Date(run.createdAt) });
  return `${body}\n\nCurrent time: ${now.toISOString()}`;
}

/** The heartbeat's user message: every pending system event, oldest first, then the heartbeat prompt. */
export function heartbeatPrompt(events: readonly SystemEvent[], prompt: string, now: Date): string {
  const lines = events.map((e) => `- [${new Date(e.createdAt).toISOString()}] ${e.text}`);
  return [`System events (${events.length}):`, ...lines, '', prompt, '', `Current time: ${now.toISOString()}`].join('\n');
}
