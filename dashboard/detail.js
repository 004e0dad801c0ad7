// The run detail view: a modal <dialog> (the browser traps focus in it and closes it on Escape); focus goes back
// to the button that opened it. It reloads while open when the feed reports a change of the run or its deliveries.
import { api, isDeadDelivery } from './api.js';
import { badge, el, fill, sessionLabel, timeEl } from './dom.js';

const dialog = () => document.getElementById('run-dialog');
let current = null; // { id, opener }

export function initDetail() {
  document.getElementById('run-close').addEventListener('click', () => dialog().close());
  dialog().addEventListener('close', () => {
    const opener = current?.opener;
    current = null;
    if (opener?.isConnected) opener.focus();
  });
  // A click on the backdrop (outside the dialog's box) closes it too.
  dialog().addEventListener('click', (ev) => {
    if (ev.target === dialog()) dialog().close();
  });
}

export const openRunId = () => current?.id ?? null;

export async function openRun(id, opener) {
  current = { id, opener: opener ?? document.activeElement };
  fill(document.getElementById('run-h'), 'Run ', el('code', {}, id));
  fill(document.getElementById('run-body'), el('p', { class: 'hint' }, 'Loading…'));
  if (!dialog().open) dialog().showModal();
  await refreshRun();
}

/**
 * Accepts `{ run, transcript|turns, deliveries }` or the run with those fields inline (the admin API's docs name the
 * parts, not the nesting: docs/admin.md).
 */
function normalise(body) {
  const run = body?.run ?? body ?? {};
  const pick = (...names) => {
    for (const n of names) for (const o of [body, run]) if (Array.isArray(o?.[n])) return o[n];
    return [];
  };
  return { run, turns: pick('transcript', 'turns', 'messages'), deliveries: pick('deliveries') };
}

export async function refreshRun() {
  if (!current) return;
  const id = current.id;
  const target = document.getElementById('run-body');
  let body;
  try {
    body = await api(`/runs/${encodeURIComponent(id)}`);
  } catch (err) {
    if (current?.id === id)
      fill(target, el('p', { class: 'error', role: 'alert' }, `Could not load the run: ${err.message}`));
    return;
  }
  if (current?.id !== id) return; // another run was opened meanwhile
  const { run, turns, deliveries } = normalise(body);
  // Redrawing replaces the buttons: focus inside them would fall to the page, so it moves to the heading.
  const hadFocus = target.contains(document.activeElement);
  const facts = [
    ['State', badge(run.state, String(run.state ?? '').replace('_', ' '))],
    ['Name', run.label ?? run.name],
    ['Hook', run.hookName ?? run.hookPath],
    [
      'Session',
      run.sessionKey && sessionLabel(run.sessionKey) !== run.sessionKey
        ? [sessionLabel(run.sessionKey), ' ', el('code', {}, run.sessionKey)]
        : run.sessionKey,
    ],
    ['Agent', run.agentId],
    ['Model', run.model ?? 'agent default'],
    ['Attempts', run.attempts],
    ['Created', timeEl(run.createdAt)],
    ['Started', timeEl(run.startedAt)],
    ['Finished', timeEl(run.finishedAt)],
  ];
  fill(
    target,
    el('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v ?? '—')])),
    run.error ? section('Error', el('p', { class: 'error-text' }, run.error)) : null,
    run.state === 'failed' || run.state === 'timed_out' ? retryRunButton(id) : null,
    section('Message', el('pre', { class: 'text' }, run.message ?? '—')),
    section(
      'Reply',
      run.reply
        ? el('pre', { class: 'text reply' }, run.reply)
        : el(
            'p',
            { class: 'hint' },
            run.state === 'succeeded'
              ? 'No reply text.'
              : run.state === 'failed' || run.state === 'timed_out'
                ? 'No reply: the run failed.'
                : 'No reply yet.',
          ),
    ),
    section(
      `Transcript (${turns.length} turn${turns.length === 1 ? '' : 's'})`,
      turns.length
        ? el(
            'ol',
            { class: 'turns' },
            ...turns.map((t) =>
              el(
                'li',
                { class: `turn ${t.role}` },
                el('span', { class: 'role' }, t.role ?? ''),
                timeEl(t.createdAt),
                el('pre', { class: 'text' }, t.content ?? t.text ?? ''),
              ),
            ),
          )
        : el('p', { class: 'hint' }, 'No transcript turns.'),
    ),
    section(
      'Deliveries',
      deliveries.length
        ? el('ul', { class: 'rows' }, ...deliveries.map(deliveryRow))
        : el('p', { class: 'hint' }, run.deliveryStatus ? `None (${run.deliveryStatus}).` : 'None.'),
    ),
  );
  if (hadFocus) document.getElementById('run-h').focus();
}

const section = (title, ...content) => el('section', { class: 'detail-part' }, el('h3', {}, title), ...content);

function deliveryRow(d) {
  return el(
    'li',
    { class: 'delivery', 'data-delivery': d.id },
    el(
      'div',
      { class: 'row-main' },
      badge(d.state),
      el('strong', {}, d.channel),
      el('span', { class: 'to' }, `→ ${d.to ?? ''}`),
      el('span', { class: 'meta' }, `${d.attempts ?? 0} attempt${d.attempts === 1 ? '' : 's'}`),
      isDeadDelivery(d.state) ? actionButton('Retry delivery', `/deliveries/${encodeURIComponent(d.id)}/retry`) : null,
    ),
    d.lastError ? el('p', { class: 'error-text' }, `Last error: ${d.lastError}`) : null,
  );
}

const retryRunButton = (id) => el('p', {}, actionButton('Retry run', `/runs/${encodeURIComponent(id)}/retry`));

function actionButton(label, path) {
  const b = el('button', { type: 'button', class: 'primary small' }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await api(path, { method: 'POST' });
      b.textContent = 'Queued again';
    } catch (err) {
      b.disabled = false;
      b.after(el('span', { class: 'error', role: 'alert' }, ` ${err.message}`));
    }
  });
  return b;
}
