/**
 * Reading a Server-Sent Events stream as EventSource does: `id:`, `event:` and `data:` lines, a blank line ends a
 * message, `:` lines are comments, a `\r\n` line end is accepted. Pushed chunk by chunk (a line may span chunks);
 * a message without data is not dispatched. Used by `hookgate tail` and the tests of the live feed.
 */
export interface SseMessage {
  /** The message's `id:`, if it had one. */
  id: string | undefined;
  /** `event:`, or `message` when absent. */
  event: string;
  /** The `data:` lines joined by `\n`. */
  data: string;
}

export class SseParser {
  private buf = '';
  private id: string | undefined;
  private event: string | undefined;
  private data: string[] = [];

  constructor(
    private readonly onMessage: (message: SseMessage) => void,
    private readonly onComment?: (text: string) => void,
  ) {}

  /** Feed the next decoded chunk of the stream. */
  push(chunk: string): void {
    this.buf += chunk;
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl).replace(/\r$/, '');
      this.buf = this.buf.slice(nl + 1);
      if (line === '') this.dispatch();
      else if (line.startsWith(':')) this.onComment?.(line.slice(1).trim());
      else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') this.id = value;
        else if (field === 'event') this.event = value;
        else if (field === 'data') this.data.push(value);
      }
    }
  }

  private dispatch(): void {
    if (this.data.length) this.onMessage({ id: this.id, event: this.event ?? 'message', data: this.data.join('\n') });
    this.id = this.event = undefined;
    this.data = [];
  }
}
