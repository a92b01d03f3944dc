// The team's keys: one per person or system, each with a role (viewer, operator, admin). The
// list never shows a key, only its last four characters; a new key is shown once, with a copy
// button and a warning, and a revoked key stops working everywhere within a second. Only an
// admin key may see or change them: any other key is told so and the form is disabled.

import { t } from './i18n.js';
import { $, setText } from './view.js';
import { call, fieldError, problemText } from './admin-call.js';
import { viewOnly } from './admin-controls.js';
import { copyText } from './admin-copy.js';

const NAME_CHARS = 64;
const ROLES = ['viewer', 'operator', 'admin'];

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

const when = (at) => (at ? new Date(at).toLocaleString() : '–');

function formDisabled(disabled) {
  for (const input of $('team-key-form').elements) input.disabled = disabled;
}

/** Draws the team's keys, or says why this key may not see them. */
export async function refreshKeys() {
  let body;
  try {
    body = await call('GET', '/api/admin/keys');
  } catch (err) {
    if (err.status === 401) return;
    const refused = viewOnly(err);
    formDisabled(refused);
    $('team-keys').replaceChildren();
    setText('keys-status', refused ? t('admin.keysAdminOnly') : problemText(err));
    return;
  }
  formDisabled(false);
  const keys = Array.isArray(body?.keys) ? body.keys : [];
  const usedShown = keys.some((k) => k.last_used_at);
  const table = el('table', { className: 'list', id: 'team-key-table' }, el('caption', { className: 'visually-hidden', textContent: t('admin.keys') }));
  const head = table.createTHead().insertRow();
  const columns = ['admin.keyName', 'admin.keyRole', 'admin.keyEnds', 'admin.keyCreated'];
  if (usedShown) columns.push('admin.keyUsed');
  columns.push('admin.keyActions');
  for (const label of columns) head.append(el('th', { scope: 'col', textContent: t(label) }));
  const tbody = table.createTBody();
  for (const k of keys) {
    const tr = tbody.insertRow();
    tr.dataset.key = k.id;
    tr.append(el('th', { scope: 'row', textContent: k.name }));
    tr.insertCell().textContent = ROLES.includes(k.role) ? t(`admin.role.${k.role}`) : String(k.role);
    tr.insertCell().textContent = k.last4 ? `…${k.last4}` : '';
    tr.insertCell().textContent = k.configured ? t('admin.keyConfigured') : when(k.created_at);
    if (usedShown) tr.insertCell().textContent = when(k.last_used_at);
    const actions = tr.insertCell();
    if (!k.configured) {
      actions.append(el('button', {
        type: 'button',
        className: 'button danger',
        textContent: t('admin.keyRevoke'),
        onclick: () => revoke(k),
      }));
      actions.firstChild.setAttribute('aria-label', t('admin.keyRevokeNamed', { name: k.name }));
    }
  }
  $('team-keys').replaceChildren(table);
}

async function create(e) {
  e.preventDefault();
  const name = $('team-key-name').value.trim();
  const role = $('team-key-role').value;
  const bad = !name || [...name].length > NAME_CHARS || /[\u0000-\u001f\u007f]/.test(name);
  fieldError('err-team-key-name', bad ? t('admin.err.keyName', { max: NAME_CHARS }) : '');
  if (bad) {
    $('team-key-name').focus();
    return;
  }
  setText('keys-status', t('admin.applying'));
  let made;
  try {
    made = await call('POST', '/api/admin/keys', { name, role });
  } catch (err) {
    setText('keys-status', viewOnly(err) ? t('admin.keysAdminOnly') : '');
    if (!viewOnly(err)) fieldError('err-team-key-name', problemText(err));
    return;
  }
  $('team-key-name').value = '';
  setText('team-key-value', made.key);
  $('team-key-new').hidden = false;
  setText('keys-status', t('admin.keyMade', { name: made.name, role: t(`admin.role.${made.role}`) }));
  $('team-key-copy').focus();
  await refreshKeys();
}

async function revoke(k) {
  if (!confirm(t('admin.keyRevokeConfirm', { name: k.name }))) return;
  try {
    await call('DELETE', `/api/admin/keys/${encodeURIComponent(k.id)}`);
  } catch (err) {
    setText('keys-status', viewOnly(err) ? t('admin.keysAdminOnly') : problemText(err));
    return;
  }
  setText('keys-status', t('admin.keyRevoked', { name: k.name }));
  await refreshKeys();
}

export function mountKeys() {
  $('team-key-form').addEventListener('submit', create);
  $('team-key-copy').addEventListener('click', () => copyText($('team-key-value'), 'keys-status'));
  $('team-key-done').addEventListener('click', () => {
    $('team-key-new').hidden = true;
    setText('team-key-value', '');
    $('team-key-name').focus();
  });
}
