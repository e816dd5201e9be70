// The demo page's script: the form submits through the client package, served by Onceflow at /demo/client/.
import { IntentClient, OnceflowApiError } from '/demo/client/index.js';

const $ = (id) => document.getElementById(id);
const config = await (await fetch('/demo/config.json')).json();
if (config.apiKey && !$('api-key').value) $('api-key').value = config.apiKey;
// ?wait=N: how long the server may hold each submission (Prefer: wait), 0 to watch the polling.
const waitParam = new URLSearchParams(location.search).get('wait');
const wait = waitParam === null ? undefined : Number(waitParam);

let client;
const clientFor = (apiKey) => {
  if (client?.apiKey !== apiKey) client = { apiKey, onceflow: new IntentClient({ apiKey }) };
  return client.onceflow;
};

// Only the latest click's job is shown; an earlier click still running stays out of sight.
let latestClick = 0;
let shownTicket;

$('reply').addEventListener('submit', async (event) => {
  event.preventDefault();
  const click = ++latestClick;
  const faults = [...document.querySelectorAll('.fault:checked')].map((box) => box.value);
  const input = { ticketId: $('ticket').value, customerMessage: [$('message').value, ...faults].join(' '), channel: $('channel').value };
  const onceflow = clientFor($('api-key').value);
  const render = (job) => {
    if (click === latestClick) showJob(job, input.ticketId);
  };
  $('job-error').textContent = '';
  try {
    const job = await onceflow.submit('support.reply', input, { wait, onUpdate: render });
    if (click !== latestClick) return;
    render(job);
    // Terminal and shown: the next click with the same text is a new intent.
    onceflow.shown(job);
  } catch (error) {
    if (click === latestClick) showError(error);
  }
});

function showJob(job, ticketId) {
  $('job').hidden = false;
  $('job-id').textContent = job.id;
  $('job-status').textContent = job.status;
  $('job-key').textContent = job.idempotencyKey;
  $('job-outcome').textContent = job.status === 'succeeded' ? `Reply: ${job.result.reply} (message ${job.result.messageId})` : job.status === 'failed' ? `Failed: ${job.error.type}: ${job.error.detail}` : '';
  $('attempts').replaceChildren(...job.attempts.map((attempt) => row(attempt.seq, attempt.provider, attempt.status)));
  shownTicket = ticketId;
  $('messages-ticket').textContent = ticketId;
}

function showError(error) {
  $('job').hidden = false;
  $('job-error').textContent =
    error instanceof OnceflowApiError && error.status === 409
      ? 'This key was already used for another request (409): nothing was sent.'
      : `${error.name}: ${error.message}`;
}

function row(...cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) tr.append(Object.assign(document.createElement('td'), { textContent: String(cell) }));
  return tr;
}

// The messages the simulated messaging service received for the shown ticket, every second.
setInterval(async () => {
  if (shownTicket === undefined) return;
  const ticketId = shownTicket;
  const response = await fetch(`/demo/messages?ticketId=${encodeURIComponent(ticketId)}`).catch(() => undefined);
  if (!response?.ok || ticketId !== shownTicket) return;
  const { messages } = await response.json();
  $('messages').replaceChildren(...messages.map((message) => Object.assign(document.createElement('li'), { textContent: `${message.messageId} (key ${message.idempotencyKey}): ${message.text}` })));
}, 1000);
