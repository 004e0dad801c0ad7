// The live feed: GET /api/v1/events read with fetch() streaming, because EventSource cannot send the Authorization
// header and the token must never go in a URL. The SSE text format is parsed here; a dropped stream reconnects
// with Last-Event-ID so the server can replay what was missed.

/**
 * startFeed({ token, onEvent(type, data, id), onStatus('connecting'|'live'|'retrying'|'refused', info), onOpen })
 * returns { stop() }. onOpen runs on each (re)connection: the caller reloads its lists then, so nothing that
 * happened while disconnected is missing even when the server could not replay it.
 */
export function startFeed({ token, onEvent, onStatus, onOpen }) {
  let lastId = null;
  let retryMs = 1000;
  let stopped = false;
  let controller = null;
  let failures = 0;

  async function connect() {
    while (!stopped) {
      controller = new AbortController();
      onStatus('connecting');
      try {
        const headers = { authorization: `Bearer ${token()}`, accept: 'text/event-stream' };
        if (lastId !== null) headers['last-event-id'] = lastId;
        const res = await fetch('/api/v1/events', { headers, signal: controller.signal, cache: 'no-store' });
        if (res.status === 401) {
          onStatus('refused');
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        failures = 0;
        onStatus('live');
        onOpen?.();
        await readStream(res.body);
        if (!stopped) onStatus('retrying', 'the server closed the stream');
      } catch (err) {
        if (stopped) return;
        failures++;
        onStatus('retrying', err?.message ?? String(err));
      }
      // Back off on repeated failures (a server restarting), never beyond 15 s.
      await sleep(Math.min(retryMs * 2 ** Math.min(failures, 4), 15000));
    }
  }

  async function readStream(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let event = { type: '', data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      // Lines end in \n, \r\n or \r. A lone trailing \r may be the first half of \r\n: keep it for the next chunk.
      const lines = buffer.split(/\r\n|\n|\r(?!$)/);
      buffer = lines.pop();
      for (const line of lines) {
        if (line === '') {
          dispatch(event);
          event = { type: '', data: [], id: null };
          continue;
        }
        if (line.startsWith(':')) continue; // a comment (keep-alive)
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let val = colon === -1 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'data') event.data.push(val);
        else if (field === 'event') event.type = val;
        else if (field === 'id' && !val.includes('\0')) event.id = val;
        else if (field === 'retry' && /^\d+$/.test(val)) retryMs = Number(val);
      }
    }
  }

  function dispatch(event) {
    if (event.id !== null) lastId = event.id;
    if (event.data.length === 0) return;
    let data;
    try {
      data = JSON.parse(event.data.join('\n'));
    } catch {
      return; // not ours
    }
    const type = event.type || data?.type || 'message';
    try {
      onEvent(type, data, event.id);
    } catch (err) {
      console.error('feed handler failed', err);
    }
  }

  connect();
  return {
    stop() {
      stopped = true;
      controller?.abort();
    },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
