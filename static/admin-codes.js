// Who may join an event and with which codes: the access rule (open, a presale until the
// general opening, invitation only) and the organizer's identity key (written, never shown
// again); the priority lane's share of offers (an admission setting, sent with the version
// like the others); and the access codes, generated or uploaded, listed a page at a time with
// the uses each has left. Generated codes are shown once, to copy or download.

import { t } from './i18n.js';
import { $, setText } from './view.js';
import { call, eventPath, fieldError, problemText } from './admin-call.js';
import { viewOnly } from './admin-controls.js';
import { copyText } from './admin-copy.js';

const CODE = /^[A-Za-z0-9_-]{4,64}$/;
const GENERATE_MAX = 100000;
const UPLOAD_MAX = 10000;
const USES_MAX = 1000000;
const PAGE = 50;
const SECRET_MIN = 32;

let event = null;
let apply = async () => false;
/** The page of codes shown: the code it starts after ('' for the first) and the next page's. */
let after = '';
let nextAfter = null;
let shareTyped = false;

const path = (suffix) => eventPath(event, suffix);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** A datetime-local value as RFC 3339 ('' stays ''), or null when it is not a time. */
function rfc3339(local) {
  if (!local) return '';
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/** An RFC 3339 time as the value of a datetime-local field, in the organizer's time zone. */
export function localValue(at) {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

// ---- access rule and identity key -------------------------------------------------------

const ACCESS_ERRORS = ['err-access-rule', 'err-access-general', 'err-identity-alg', 'err-identity-key'];

function describeAccess(a) {
  const rule = t(`admin.access.${a.access}`);
  const general = a.general_opens_at ? t('admin.accessGeneral', { when: new Date(a.general_opens_at).toLocaleString() }) : '';
  const identity = a.identity ? t(a.identity.required ? 'admin.identityOnRequired' : 'admin.identityOn', { alg: a.identity.alg }) : t('admin.identityOff');
  return [t('admin.accessNow', { rule }), general, identity].filter(Boolean).join(' ');
}

function showAccess(a) {
  setText('access-current', describeAccess(a));
  const radio = document.querySelector(`input[name="access-rule"][value="${a.access}"]`);
  if (radio) radio.checked = true;
  $('access-general').value = a.general_opens_at ? localValue(a.general_opens_at) : '';
  $('identity-alg').value = 'keep';
  $('identity-key').value = '';
  $('identity-required').checked = Boolean(a.identity?.required);
}

async function readAccess() {
  if (!event) return;
  try {
    showAccess(await call('GET', path('/access')));
  } catch (err) {
    if (err.status !== 401) setText('access-current', problemText(err));
  }
}

function accessBody() {
  const errors = {};
  const rule = document.querySelector('input[name="access-rule"]:checked')?.value || 'open';
  const body = { access: rule };
  const general = rfc3339($('access-general').value);
  if (general === null) errors['err-access-general'] = t('admin.err.time');
  else if (general) body.general_opens_at = general;
  else if (rule === 'presale') errors['err-access-general'] = t('admin.err.presaleNeedsTime');
  const alg = $('identity-alg').value;
  const secret = $('identity-key').value.trim();
  if (alg === 'none') body.identity = null;
  else if (alg === 'HS256') {
    if ([...secret].length < SECRET_MIN || [...secret].length > 1024) errors['err-identity-key'] = t('admin.err.secret', { min: SECRET_MIN });
    body.identity = { alg, secret, required: $('identity-required').checked };
  } else if (alg === 'ES256' || alg === 'RS256') {
    if (!/^-----BEGIN PUBLIC KEY-----[\s\S]+-----END PUBLIC KEY-----$/.test(secret)) errors['err-identity-key'] = t('admin.err.pem');
    body.identity = { alg, public_key_pem: secret, required: $('identity-required').checked };
  }
  return { errors, body };
}

function accessField(err) {
  const detail = String(err.problem?.detail || '');
  if (/general_opens_at|presale/.test(detail)) return 'err-access-general';
  if (/identity\.(secret|public_key_pem)|takes identity/.test(detail)) return 'err-identity-key';
  if (/identity/.test(detail)) return 'err-identity-alg';
  return 'err-access-rule';
}

async function saveAccess(e) {
  e.preventDefault();
  const { errors, body } = accessBody();
  for (const id of ACCESS_ERRORS) fieldError(id, errors[id] || '');
  if (Object.keys(errors).length) {
    setText('access-status', '');
    return;
  }
  setText('access-status', t('admin.applying'));
  try {
    showAccess(await call('PATCH', path('/access'), body));
    setText('access-status', t('admin.accessDone'));
  } catch (err) {
    if (viewOnly(err)) {
      setText('access-status', t('admin.viewOnly'));
      return;
    }
    setText('access-status', '');
    fieldError(accessField(err), problemText(err));
  }
}

// ---- priority lane --------------------------------------------------------------------------

/** Shows the share the stats report, unless the organizer is typing one. */
export function adoptPriority(admission) {
  if (shareTyped || typeof admission?.priority_share !== 'number') return;
  $('priority-share').value = String(Math.round(admission.priority_share * 100));
}

async function savePriority(e) {
  e.preventDefault();
  const v = $('priority-share').value.trim();
  const bad = !/^\d+$/.test(v) || Number(v) > 100;
  fieldError('err-priority-share', bad ? t('admin.err.percent') : '');
  if (bad) return;
  const share = Number(v) / 100;
  if (await apply({ priority_share: share }, t('admin.priorityDone', { n: Number(v) }), 'priority-status')) shareTyped = false;
}

// ---- codes ----------------------------------------------------------------------------------

const CODE_ERRORS = ['err-code-uses', 'err-code-starts', 'err-code-ends', 'err-code-count', 'err-code-list'];

function listed(text) {
  return text.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
}

function codesBody(how) {
  const errors = {};
  const body = {};
  const uses = $('code-uses').value.trim();
  if (!/^\d+$/.test(uses) || Number(uses) < 1 || Number(uses) > USES_MAX) errors['err-code-uses'] = t('admin.err.between', { min: 1, max: USES_MAX.toLocaleString() });
  else body.uses = Number(uses);
  const starts = rfc3339($('code-starts').value);
  const ends = rfc3339($('code-ends').value);
  if (starts === null) errors['err-code-starts'] = t('admin.err.time');
  else if (starts) body.starts_at = starts;
  if (ends === null) errors['err-code-ends'] = t('admin.err.time');
  else if (ends) body.ends_at = ends;
  if (starts && ends && Date.parse(ends) <= Date.parse(starts)) errors['err-code-ends'] = t('admin.err.endsAfter');
  body.lane = $('code-lane').value;
  if (how === 'generate') {
    const n = $('code-count').value.trim();
    if (!/^\d+$/.test(n) || Number(n) < 1 || Number(n) > GENERATE_MAX) errors['err-code-count'] = t('admin.err.between', { min: 1, max: GENERATE_MAX.toLocaleString() });
    else body.generate = Number(n);
  } else {
    const codes = listed($('code-list').value);
    const badAt = codes.findIndex((c) => !CODE.test(c));
    if (!codes.length || codes.length > UPLOAD_MAX) errors['err-code-list'] = t('admin.err.codeCount', { max: UPLOAD_MAX.toLocaleString() });
    else if (badAt >= 0) errors['err-code-list'] = t('admin.err.codeLine', { line: badAt + 1, code: codes[badAt].slice(0, 70) });
    else body.codes = codes;
  }
  return { errors, body };
}

function codesField(err, how) {
  const field = err.problem?.field;
  const detail = String(err.problem?.detail || '');
  if (field === 'uses' || /^uses/.test(detail)) return 'err-code-uses';
  if (field === 'generate') return 'err-code-count';
  if (/starts_at/.test(detail)) return 'err-code-starts';
  if (/ends_at/.test(detail)) return 'err-code-ends';
  return how === 'generate' ? 'err-code-count' : 'err-code-list';
}

async function addCodes(e) {
  e.preventDefault();
  const how = e.submitter?.value === 'upload' ? 'upload' : 'generate';
  const { errors, body } = codesBody(how);
  for (const id of CODE_ERRORS) fieldError(id, errors[id] || '');
  const first = CODE_ERRORS.find((id) => errors[id]);
  if (first) {
    setText('codes-status', '');
    document.querySelector(`[aria-describedby~="${first}"]`)?.focus();
    return;
  }
  setText('codes-status', t('admin.applying'));
  let made;
  try {
    made = await call('POST', path('/codes'), body);
  } catch (err) {
    if (viewOnly(err)) {
      setText('codes-status', t('admin.viewOnly'));
      return;
    }
    setText('codes-status', '');
    fieldError(codesField(err, how), problemText(err));
    return;
  }
  const added = Number(made?.added) || 0;
  const asked = body.generate ?? body.codes.length;
  setText('codes-status', added < asked ? t('admin.codesAddedSome', { n: added, asked }) : t('admin.codesAdded', { n: added }));
  if (Array.isArray(made?.codes) && made.codes.length) {
    $('codes-made-list').value = made.codes.join('\n');
    $('codes-made').hidden = false;
  } else {
    $('code-list').value = '';
  }
  after = '';
  await refreshCodes();
}

async function readFile() {
  const file = $('code-file').files?.[0];
  if (!file) return;
  try {
    const text = await file.text();
    const mine = listed($('code-list').value);
    $('code-list').value = [...mine, ...listed(text).map((line) => line.split(/[,;\t]/)[0].trim())].join('\n');
    fieldError('err-code-list', '');
    setText('codes-status', t('admin.codesRead', { n: listed(text).length, file: file.name }));
  } catch {
    fieldError('err-code-list', t('admin.err.fileUnread'));
  }
}

function downloadMade() {
  const blob = new Blob([`${$('codes-made-list').value}\n`], { type: 'text/plain' });
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement('a'), { href: url, download: `${event}-codes.txt`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function windowText(c) {
  if (!c.starts_at && !c.ends_at) return t('admin.codeAlways');
  const from = c.starts_at ? new Date(c.starts_at).toLocaleString() : '…';
  const to = c.ends_at ? new Date(c.ends_at).toLocaleString() : '…';
  return t('admin.codeWindow', { from, to });
}

/** Draws the page of codes starting after `after`. */
export async function refreshCodes() {
  if (!event) return;
  let body;
  try {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (after) query.set('after', after);
    body = await call('GET', path(`/codes?${query}`));
  } catch (err) {
    if (err.status !== 401) $('codes').textContent = problemText(err);
    return;
  }
  const codes = Array.isArray(body?.codes) ? body.codes : [];
  nextAfter = body?.next_after || null;
  $('codes-next').disabled = !nextAfter;
  $('codes-first').disabled = !after;
  if (!codes.length) {
    $('codes').replaceChildren(el('p', { className: 'muted', textContent: t('admin.noCodes') }));
    return;
  }
  const table = el('table', { className: 'list', id: 'code-table' }, el('caption', { textContent: t('admin.codesPage', { n: codes.length }) }));
  const head = table.createTHead().insertRow();
  for (const label of ['admin.code', 'admin.codeLane', 'admin.codeLeft', 'admin.codeValid']) head.append(el('th', { scope: 'col', textContent: t(label) }));
  const tbody = table.createTBody();
  for (const c of codes) {
    const tr = tbody.insertRow();
    tr.dataset.code = c.code;
    tr.insertCell().append(el('code', { textContent: c.code }));
    tr.insertCell().textContent = t(`admin.lane.${c.lane === 'priority' ? 'priority' : 'general'}`);
    tr.insertCell().textContent = t('admin.codeUsesLeft', { left: Number(c.uses_left).toLocaleString(), uses: Number(c.uses).toLocaleString() });
    tr.insertCell().textContent = windowText(c);
  }
  $('codes').replaceChildren(table);
}

/** Switches the card to `next` (or none). */
export function showCodesOf(next) {
  if (next !== event) {
    after = '';
    nextAfter = null;
    shareTyped = false;
    $('codes-made').hidden = true;
    $('codes-made-list').value = '';
    for (const id of [...ACCESS_ERRORS, ...CODE_ERRORS, 'err-priority-share']) fieldError(id, '');
    for (const id of ['access-status', 'codes-status', 'priority-status', 'access-current']) setText(id, '');
    $('priority-share').value = '';
  }
  event = next;
  if (!event) return;
  readAccess();
  refreshCodes();
}

/** Wires the card; `applyAdmission(patch, doneText, statusId)` sends an admission change. */
export function mountCodes(applyAdmission) {
  apply = applyAdmission;
  $('access-form').addEventListener('submit', saveAccess);
  $('priority-form').addEventListener('submit', savePriority);
  $('priority-share').addEventListener('input', () => { shareTyped = true; });
  $('codes-form').addEventListener('submit', addCodes);
  $('code-file').addEventListener('change', readFile);
  $('codes-copy').addEventListener('click', () => copyText($('codes-made-list'), 'codes-status'));
  $('codes-download').addEventListener('click', downloadMade);
  $('codes-first').addEventListener('click', () => { after = ''; refreshCodes(); });
  $('codes-next').addEventListener('click', () => {
    if (!nextAfter) return;
    after = nextAfter;
    refreshCodes();
  });
}
