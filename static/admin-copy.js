// Copying a secret shown once (a team key, new access codes) to the clipboard; where the
// browser refuses, the text is selected so the organizer can copy it by hand.

import { t } from './i18n.js';
import { setText } from './view.js';

function select(node) {
  if (node.select) {
    node.focus();
    node.select();
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

/** Copies the text of `node` (an element or a textarea) and says so in `statusId`. */
export async function copyText(node, statusId) {
  const text = node.value ?? node.textContent;
  try {
    await navigator.clipboard.writeText(text);
    setText(statusId, t('admin.copied'));
  } catch {
    select(node);
    setText(statusId, t('admin.copyByHand'));
  }
}
