// The exports card: one button per CSV file of the event. The files need the organizer's key,
// which a plain link cannot send, so each is fetched with it and handed to the browser as a
// download; a refused or failed download says why, beside the buttons.

import { messageFor } from './messages.js';
import { t } from './i18n.js';
import { $, setText } from './view.js';
import { eventPath, key } from './admin-call.js';
import { viewOnly } from './admin-controls.js';

export const EXPORTS = ['orders', 'sales', 'holds', 'admissions', 'audit'];

let event = null;

function sizeText(bytes) {
  if (bytes < 1024) return t('admin.bytes', { n: bytes });
  return t('admin.kilobytes', { n: Math.max(1, Math.round(bytes / 1024)) });
}

async function download(button) {
  const name = button.dataset.export;
  const file = `${name}.csv`;
  const what = t(`admin.export.${name}`);
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  setText('export-status', t('admin.exportGetting', { what }));
  try {
    let res;
    try {
      res = await fetch(eventPath(event, `/exports/${file}`), {
        headers: { Authorization: `Bearer ${key()}`, Accept: 'text/csv' },
        cache: 'no-store',
      });
    } catch {
      setText('export-status', t('admin.exportFailed', { what, why: messageFor('network') }));
      return;
    }
    if (!res.ok) {
      let problem = null;
      try {
        problem = await res.json();
      } catch {
        problem = null;
      }
      const err = { status: res.status, code: problem?.code };
      const why = viewOnly(err) ? t('admin.viewOnly')
        : res.status === 404 ? t('admin.noSuchEvent', { event })
          : messageFor(problem?.code || (res.status >= 500 ? 'server_error' : 'bad_request'));
      setText('export-status', t('admin.exportFailed', { what, why }));
      return;
    }
    let blob;
    try {
      blob = await res.blob();
    } catch {
      // The stream broke off part way: the file would be cut short, so none is offered.
      setText('export-status', t('admin.exportFailed', { what, why: t('admin.exportCut') }));
      return;
    }
    const url = URL.createObjectURL(blob);
    const a = Object.assign(document.createElement('a'), { href: url, download: `${event}-${file}` });
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    setText('export-status', t('admin.exportDone', { what, file: `${event}-${file}`, size: sizeText(blob.size) }));
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/** Switches the card to `next` (or none). */
export function showExportsOf(next) {
  if (next !== event) setText('export-status', '');
  event = next;
}

export function mountExports() {
  for (const button of document.querySelectorAll('[data-export]')) {
    button.addEventListener('click', () => download(button));
  }
}
