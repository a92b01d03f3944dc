// The stadium overview: one button per section with its seats left, so a 50,000-seat venue
// starts as a short list and only the chosen section's seats are drawn. A general-admission
// section (no rows) is bought as a quantity instead of from a map.

import { $, setText } from './view.js';
import { t } from './i18n.js';

const natural = () => new Intl.Collator(undefined, { numeric: true }).compare;

export class SectionPicker {
  constructor(list, { onPick }) {
    this.list = list;
    this.onPick = onPick;
    this.chosen = null;
    this.buttons = new Map();
  }

  /** Draws (or updates in place) the overview from `GET /api/events/{event}`'s `sections`. */
  render(sections) {
    const sorted = [...sections].sort((a, b) => natural()(a.section, b.section));
    const same = sorted.length === this.buttons.size && sorted.every((s) => this.buttons.has(s.section));
    if (!same) {
      this.list.replaceChildren();
      this.buttons.clear();
      for (const s of sorted) {
        const li = document.createElement('li');
        const button = document.createElement('button');
        button.type = 'button';
        button.dataset.section = s.section;
        const name = document.createElement('strong');
        const left = document.createElement('span');
        left.className = 'left';
        button.append(name, left);
        button.addEventListener('click', () => this.onPick(this.sections.get(s.section)));
        li.append(button);
        this.list.append(li);
        this.buttons.set(s.section, { button, name, left });
      }
    }
    this.sections = new Map(sorted.map((s) => [s.section, s]));
    for (const s of sorted) {
      const { button, name, left } = this.buttons.get(s.section);
      name.textContent = t('sections.pick', { name: s.section });
      const counts = s.seats_left > 0
        ? t('sections.left', { n: s.seats_left, total: s.seats })
        : t('sections.soldOut');
      left.textContent = s.general_admission ? `${counts} · ${t('sections.standing')}` : counts;
      button.disabled = s.seats_left === 0 && this.chosen !== s.section;
      button.setAttribute('aria-current', String(this.chosen === s.section));
    }
  }

  choose(name) {
    this.chosen = name;
    for (const [section, { button }] of this.buttons) button.setAttribute('aria-current', String(section === name));
  }
}

/** The quantity form of a general-admission section, drawn where the seat map would be. */
export function quantityForm(root, section, { max, onHold }) {
  root.replaceChildren();
  const card = document.createElement('div');
  card.className = 'card section';
  const h = document.createElement('h2');
  h.textContent = t('ga.title', { name: section.section });
  const p = document.createElement('p');
  p.className = 'muted';
  p.textContent = t('ga.text', { max });
  const form = document.createElement('form');
  form.className = 'ga-form';
  const label = document.createElement('label');
  const caption = document.createElement('span');
  caption.textContent = t('ga.quantity');
  const input = document.createElement('input');
  input.type = 'number';
  input.id = 'ga-quantity';
  input.min = '1';
  input.max = String(Math.min(max, section.seats_left));
  input.value = '1';
  label.append(caption, document.createElement('br'), input);
  const button = document.createElement('button');
  button.type = 'submit';
  button.id = 'ga-hold';
  button.className = 'button primary';
  button.textContent = t('ga.hold');
  form.append(label, button);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const n = Math.trunc(Number(input.value));
    if (n >= 1) onHold(n);
  });
  card.append(h, p, form);
  root.append(card);
}

export function sectionsPanel(visible) {
  $('sections').hidden = !visible;
}

export function loadingSection(name) {
  setText('seat-announce', t('sections.loading', { name }));
}
