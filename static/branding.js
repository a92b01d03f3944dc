// The organizer's look: colours become CSS custom properties, the logo an image, the heading
// and the paragraph text content (never markup). The server has judged every value already
// (colours #rrggbb, the logo from this site or one https origin the page's policy admits);
// the page only decides which ink reads on each colour, so a brand cannot make text unreadable.

import { $, setText } from './view.js';
import { t } from './i18n.js';

/** Relative luminance of #rrggbb (WCAG 2). */
function luminance(hex) {
  const channel = (i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Black or white, whichever reads better on `hex`. */
function inkOn(hex) {
  return contrast(hex, '#000000') >= contrast(hex, '#ffffff') ? '#000000' : '#ffffff';
}

const COLOR = /^#[0-9a-fA-F]{6}$/;

export function applyBranding(branding, eventName) {
  if (!branding || typeof branding !== 'object') return;
  const root = document.documentElement.style;
  const { primary, background } = branding.colors || {};
  if (COLOR.test(primary || '')) {
    root.setProperty('--accent', primary);
    root.setProperty('--accent-ink', inkOn(primary));
    // Links and outlines in the brand colour sit on white cards: kept only where they read.
    if (contrast(primary, '#ffffff') >= 4.5) root.setProperty('--link', primary);
  }
  if (COLOR.test(background || '')) {
    root.setProperty('--page-bg', background);
    root.setProperty('--page-ink', inkOn(background));
  }
  const band = $('brand');
  let shown = false;
  if (typeof branding.logo_url === 'string' && branding.logo_url) {
    const logo = $('brand-logo');
    logo.alt = t('brand.logo', { name: eventName || '' });
    logo.src = branding.logo_url;
    logo.hidden = false;
    shown = true;
  }
  for (const [id, value] of [['brand-heading', branding.heading], ['brand-text', branding.text]]) {
    if (typeof value === 'string' && value.trim()) {
      setText(id, value);
      $(id).hidden = false;
      shown = true;
    }
  }
  band.hidden = !shown;
  document.body.dataset.branded = 'true';
}
