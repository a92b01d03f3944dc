// The organizer's emergency controls: the queue's mode (normal, pass-through, maintenance) in
// one click, a short message shown to everyone waiting, and the event's branding and the sites
// allowed to embed it. Admission changes go through the dashboard's own `apply` (so a change
// made by someone else meanwhile is reported the same way); a view-only key is told so and the
// page keeps what it showed.

import { t } from './i18n.js';
import { $, setText } from './view.js';
import { call, eventPath, fieldError, problemText } from './admin-call.js';

const MODES = ['normal', 'pass_through', 'maintenance'];
const MESSAGE_CHARS = 280;
const HEADING_CHARS = 120;
const TEXT_CHARS = 1000;
const COLOR = /^#[0-9a-fA-F]{6}$/;
const LOGO = /^(\/([A-Za-z0-9._~%-][A-Za-z0-9._~%/-]*)?|https:\/\/[a-z0-9.-]+(:[0-9]{1,5})?(\/[A-Za-z0-9._~%/=&?+-]*)?)$/;
const ORIGIN = /^(https:\/\/(\*\.)?[a-z0-9.-]+|http:\/\/(localhost|127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}))(:[0-9]{1,5})?$/;

let event = null;
let apply = async () => false;
let mode = 'normal';

/** The words for a key that may only look: the same for every refused change. */
export const viewOnly = (err) => err?.code === 'role_forbidden' || err?.status === 403;

/** Shows the mode and the message the stats report. */
export function adoptControls(admission) {
  if (MODES.includes(admission.mode)) mode = admission.mode;
  for (const m of MODES) $(`mode-${m}`).setAttribute('aria-pressed', String(m === mode));
  const message = admission.message;
  setText('message-current', message?.text ? t('admin.messageNow', { text: message.text, level: t(`admin.level.${message.level}`) }) : t('admin.messageNone'));
}

const LOOK_FIELDS = ['brand-logo', 'brand-primary', 'brand-background', 'brand-heading', 'brand-text', 'brand-frames'];
/** Branding fields the organizer has typed in since the event was opened: never overwritten. */
let typed = new Set();

/** Fills the branding form from the event as stored (`GET /api/admin/events/{event}`), leaving
 *  what the organizer has typed since. */
export function adoptLook(stored) {
  if (stored.event !== event) return;
  const branding = stored.branding || {};
  const values = {
    'brand-logo': branding.logo_url,
    'brand-primary': branding.colors?.primary,
    'brand-background': branding.colors?.background,
    'brand-heading': branding.heading,
    'brand-text': branding.text,
    'brand-frames': (stored.frame_ancestors || []).join('\n'),
  };
  for (const [id, value] of Object.entries(values)) if (!typed.has(id)) $(id).value = value ?? '';
}

/** Switches the forms to `next` (or none). */
export function showControlsOf(next) {
  if (event !== next) {
    for (const id of ['err-message-text', 'err-logo', 'err-primary', 'err-background', 'err-heading', 'err-text', 'err-frames']) fieldError(id, '');
    setText('look-status', '');
    typed = new Set();
    for (const id of LOOK_FIELDS) $(id).value = '';
  }
  event = next;
}

async function setMode(next) {
  await apply({ mode: next }, t('admin.modeDone', { mode: t(`admin.mode.${next}`) }));
}

async function setMessage(e) {
  e.preventDefault();
  const text = $('message-text').value.trim();
  const level = $('message-level').value;
  const bad = !text || [...text].length > MESSAGE_CHARS;
  fieldError('err-message-text', bad ? t('admin.err.message', { max: MESSAGE_CHARS }) : '');
  if (bad) return;
  await apply({ message: { text, level } }, t('admin.messageSet'));
}

/** The branding form as the API takes it, or the first field in error. */
function readLook() {
  const value = (id) => $(id).value.trim();
  const errors = {};
  const branding = {};
  if (value('brand-logo')) {
    if (!LOGO.test(value('brand-logo'))) errors['err-logo'] = t('admin.err.logo');
    else branding.logo_url = value('brand-logo');
  }
  const primary = value('brand-primary');
  const background = value('brand-background');
  if (primary || background) {
    if (!COLOR.test(primary)) errors['err-primary'] = t('admin.err.color');
    if (!COLOR.test(background)) errors['err-background'] = t('admin.err.color');
    branding.colors = { primary, background };
  }
  for (const [id, err, max, name] of [['brand-heading', 'err-heading', HEADING_CHARS, 'heading'], ['brand-text', 'err-text', TEXT_CHARS, 'text']]) {
    const v = value(id);
    if (!v) continue;
    if ([...v].length > max || (name === 'heading' && /[\u0000-\u001f]/.test(v))) errors[err] = t('admin.err.textMax', { max });
    else branding[name] = v;
  }
  const frames = value('brand-frames').split(/[\s,]+/).filter(Boolean);
  if (frames.length > 10 || frames.some((o) => o.length > 255 || !ORIGIN.test(o))) errors['err-frames'] = t('admin.err.origins');
  // The sites are sent when the field holds some or the organizer emptied it, so a form whose
  // stored event could not be read never unsets them by saving a colour.
  const body = { branding };
  if (typed.has('brand-frames') || frames.length) body.frame_ancestors = frames;
  return { errors, body };
}

const FIELD_OF = { logo_url: 'err-logo', colors: 'err-primary', primary: 'err-primary', background: 'err-background', heading: 'err-heading', text: 'err-text', frame_ancestors: 'err-frames' };

async function setLook(e) {
  e.preventDefault();
  const { errors, body } = readLook();
  for (const id of Object.values(FIELD_OF)) fieldError(id, errors[id] || '');
  if (Object.keys(errors).length) {
    setText('look-status', '');
    return;
  }
  setText('look-status', t('admin.applying'));
  try {
    await call('PATCH', eventPath(event), body);
    setText('look-status', t('admin.lookDone'));
  } catch (err) {
    if (viewOnly(err)) {
      setText('look-status', t('admin.viewOnly'));
      return;
    }
    const named = err.problem?.field || Object.keys(FIELD_OF).find((f) => (err.problem?.detail || '').startsWith(f));
    setText('look-status', '');
    fieldError(FIELD_OF[named] || 'err-frames', problemText(err));
  }
}

/** Wires the controls; `applyAdmission(patch, doneText)` sends an admission change. */
export function mountControls(applyAdmission) {
  apply = applyAdmission;
  for (const m of MODES) $(`mode-${m}`).addEventListener('click', () => setMode(m));
  $('message-form').addEventListener('submit', setMessage);
  $('message-clear').addEventListener('click', () => apply({ message: null }, t('admin.messageCleared')));
  $('look-form').addEventListener('submit', setLook);
  for (const id of LOOK_FIELDS) $(id).addEventListener('input', () => typed.add(id));
}
