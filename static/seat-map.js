// The seat map: one <canvas> per section, so thousands of seats draw in milliseconds
// and the DOM stays small. Each canvas is keyboard-operable: arrow keys move a focus
// ring between seats, Space or Enter selects, Home/End jump along the row.

import { locale, t } from './i18n.js';

const COLORS = {
  available: '#e6eefc',
  availableEdge: '#2457c5',
  selected: '#2457c5',
  taken: '#c9ced6',
  focus: '#f0a500',
  label: '#5b6577',
};
const LABEL_W = 34;
const MIN_CELL = 16;
const MAX_CELL = 30;

export class SeatMap {
  constructor(root, { maxSeats, price, onChange, onLimit }) {
    this.root = root;
    this.maxSeats = maxSeats;
    this.price = price;
    this.onChange = onChange;
    this.onLimit = onLimit;
    this.byId = new Map();
    this.chosen = new Set();
    this.sections = [];
    this.shape = '';
    new ResizeObserver(() => this.sections.forEach((s) => this.layout(s))).observe(root);
  }

  hasSeats() {
    return this.byId.size > 0;
  }

  selected() {
    return [...this.chosen].map((id) => this.byId.get(id)).filter(Boolean);
  }

  clearSelection() {
    this.chosen.clear();
    this.sections.forEach((s) => this.draw(s));
    this.onChange(this.selected());
  }

  /** Takes a fresh seat list; returns the selected seats that became taken meanwhile. */
  setSeats(seats) {
    const shape = seats.map((s) => s.seat_id).join('|');
    this.byId = new Map(seats.map((s) => [s.seat_id, s]));
    if (shape !== this.shape) {
      this.shape = shape;
      this.build(seats);
    }
    const lost = [];
    for (const id of [...this.chosen]) {
      const seat = this.byId.get(id);
      if (!seat || seat.state !== 'available') {
        this.chosen.delete(id);
        if (seat) lost.push(seat);
      }
    }
    this.sections.forEach((s) => {
      s.rows.forEach((row) => row.forEach((cell) => { cell.seat = this.byId.get(cell.seat.seat_id) || cell.seat; }));
      this.draw(s);
      // Keep the focused seat's description true when its state changed under the cursor.
      if (s.focused) this.say(s);
    });
    if (lost.length) this.onChange(this.selected());
    return lost;
  }

  /** Forgets the drawn section (another section, or a quantity form, takes its place). */
  reset() {
    this.byId = new Map();
    this.chosen.clear();
    this.sections = [];
    this.shape = '';
    this.root.replaceChildren();
  }

  /** Applies `?since=` changes; returns the selected seats that became taken meanwhile. */
  applyChanges(changes) {
    const lost = [];
    for (const { seat_id: id, state } of changes) {
      const seat = this.byId.get(id);
      if (!seat) continue;
      seat.state = state;
      if (state !== 'available' && this.chosen.delete(id)) lost.push(seat);
    }
    if (changes.length) {
      this.sections.forEach((s) => {
        this.draw(s);
        if (s.focused) this.say(s);
      });
    }
    if (lost.length) this.onChange(this.selected());
    return lost;
  }

  markTaken(ids) {
    for (const id of ids) {
      const seat = this.byId.get(id);
      if (seat) seat.state = 'taken';
      this.chosen.delete(id);
    }
    this.sections.forEach((s) => {
      this.draw(s);
      if (s.focused) this.say(s);
    });
    this.onChange(this.selected());
  }

  /** Groups seats into sections → rows (natural order) → seats by number. */
  build(seats) {
    const groups = new Map();
    for (const seat of seats) {
      if (!groups.has(seat.section)) groups.set(seat.section, new Map());
      const rows = groups.get(seat.section);
      const rowKey = String(seat.row);
      if (!rows.has(rowKey)) rows.set(rowKey, []);
      rows.get(rowKey).push(seat);
    }
    const natural = new Intl.Collator(locale, { numeric: true });
    this.root.replaceChildren();
    this.sections = [...groups.keys()].sort(natural.compare).map((name) => {
      const rowMap = groups.get(name);
      const rowNames = [...rowMap.keys()].sort(natural.compare);
      const rows = rowNames.map((r) =>
        rowMap.get(r).sort((a, b) => Number(a.number) - Number(b.number)).map((seat, i) => ({ seat, col: i })),
      );
      return this.mountSection(name, rowNames, rows);
    });
    this.sections.forEach((s) => this.layout(s));
  }

  mountSection(name, rowNames, rows) {
    const seats = rows.flat().map((c) => c.seat);
    const prices = seats.map((s) => s.price_cents).filter((p) => typeof p === 'number');
    const wrap = document.createElement('div');
    wrap.className = 'card section';
    const h = document.createElement('h2');
    h.textContent = t('map.section', { name });
    const small = document.createElement('small');
    const lo = Math.min(...prices);
    const hi = Math.max(...prices);
    small.textContent = prices.length ? (lo === hi ? this.price(lo) : `${this.price(lo)} – ${this.price(hi)}`) : '';
    h.append(small);
    const scroll = document.createElement('div');
    scroll.className = 'section-scroll';
    const canvas = document.createElement('canvas');
    canvas.tabIndex = 0;
    canvas.dataset.section = name;
    canvas.setAttribute('role', 'application');
    canvas.setAttribute('aria-roledescription', t('map.roleDescription'));
    canvas.setAttribute('aria-label', t('map.sectionLabel', { name, n: seats.length }));
    const status = document.createElement('p');
    status.className = 'seat-focus';
    status.setAttribute('aria-live', 'polite');
    scroll.append(canvas);
    wrap.append(h, scroll, status);
    this.root.append(wrap);
    const section = { name, rowNames, rows, canvas, status, focus: { r: 0, c: 0 }, focused: false, cell: MIN_CELL };
    canvas.addEventListener('keydown', (e) => this.onKey(section, e));
    canvas.addEventListener('click', (e) => this.onClick(section, e));
    canvas.addEventListener('mousemove', (e) => {
      const hit = this.hit(section, e);
      canvas.style.cursor = hit && hit.seat.state === 'available' ? 'pointer' : 'default';
      canvas.title = hit ? this.describe(hit.seat) : '';
    });
    canvas.addEventListener('focus', () => { section.focused = true; this.draw(section); this.say(section); });
    canvas.addEventListener('blur', () => { section.focused = false; this.draw(section); });
    return section;
  }

  layout(section) {
    const cols = Math.max(1, ...section.rows.map((r) => r.length));
    // The scroll box's own width (padding excluded): wider rows scroll inside it, never the page.
    const avail = Math.max(160, section.canvas.parentElement.clientWidth - 8);
    section.cell = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor((avail - LABEL_W) / cols)));
    const w = LABEL_W + cols * section.cell + 4;
    const h = section.rows.length * section.cell + 4;
    const dpr = window.devicePixelRatio || 1;
    section.canvas.style.width = `${w}px`;
    section.canvas.style.height = `${h}px`;
    section.canvas.width = Math.round(w * dpr);
    section.canvas.height = Math.round(h * dpr);
    section.dpr = dpr;
    this.draw(section);
  }

  draw(section) {
    const { canvas, cell, rows, rowNames } = section;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(section.dpr || 1, 0, 0, section.dpr || 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.font = `${Math.max(10, Math.floor(cell * 0.45))}px system-ui, sans-serif`;
    ctx.textBaseline = 'middle';
    const radius = cell * 0.36;
    rows.forEach((row, r) => {
      const cy = 2 + r * cell + cell / 2;
      ctx.fillStyle = COLORS.label;
      ctx.fillText(rowNames[r], 2, cy);
      for (const { seat, col } of row) {
        const cx = 2 + LABEL_W + col * cell + cell / 2;
        ctx.beginPath();
        ctx.arc(cx, cy, radius, 0, Math.PI * 2);
        if (this.chosen.has(seat.seat_id)) {
          ctx.fillStyle = COLORS.selected;
          ctx.fill();
        } else if (seat.state === 'available') {
          ctx.fillStyle = COLORS.available;
          ctx.fill();
          ctx.lineWidth = 1.5;
          ctx.strokeStyle = COLORS.availableEdge;
          ctx.stroke();
        } else {
          ctx.fillStyle = COLORS.taken;
          ctx.fill();
        }
      }
    });
    if (section.focused) {
      const { r, c } = section.focus;
      const target = rows[r]?.[c];
      if (target) {
        const cx = 2 + LABEL_W + target.col * cell + cell / 2;
        const cy = 2 + r * cell + cell / 2;
        ctx.beginPath();
        ctx.arc(cx, cy, radius + 3, 0, Math.PI * 2);
        ctx.lineWidth = 3;
        ctx.strokeStyle = COLORS.focus;
        ctx.stroke();
      }
    }
  }

  hit(section, e) {
    const rect = section.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left - 2 - LABEL_W;
    const y = e.clientY - rect.top - 2;
    const r = Math.floor(y / section.cell);
    const col = Math.floor(x / section.cell);
    const row = section.rows[r];
    if (!row || x < 0) return null;
    const c = row.findIndex((cell) => cell.col === col);
    return c < 0 ? null : { r, c, seat: row[c].seat };
  }

  onClick(section, e) {
    const hit = this.hit(section, e);
    if (!hit) return;
    section.focus = { r: hit.r, c: hit.c };
    this.toggle(section, hit.seat);
  }

  onKey(section, e) {
    const { rows, focus } = section;
    let { r, c } = focus;
    switch (e.key) {
      case 'ArrowRight': c = Math.min(rows[r].length - 1, c + 1); break;
      case 'ArrowLeft': c = Math.max(0, c - 1); break;
      case 'ArrowDown':
      case 'ArrowUp': {
        const nr = e.key === 'ArrowDown' ? Math.min(rows.length - 1, r + 1) : Math.max(0, r - 1);
        const col = rows[r][c].col;
        c = nearest(rows[nr], col);
        r = nr;
        break;
      }
      case 'Home': c = 0; break;
      case 'End': c = rows[r].length - 1; break;
      case ' ':
      case 'Enter':
        e.preventDefault();
        this.toggle(section, rows[r][c].seat);
        return;
      default:
        return;
    }
    e.preventDefault();
    section.focus = { r, c };
    this.draw(section);
    this.say(section);
  }

  toggle(section, seat) {
    if (this.chosen.has(seat.seat_id)) {
      this.chosen.delete(seat.seat_id);
    } else if (seat.state !== 'available') {
      this.say(section, t('map.seatTaken'));
      return;
    } else if (this.chosen.size >= this.maxSeats) {
      this.onLimit();
      return;
    } else {
      this.chosen.add(seat.seat_id);
    }
    this.draw(section);
    this.say(section);
    this.onChange(this.selected());
  }

  describe(seat) {
    const state = this.chosen.has(seat.seat_id) ? 'selected' : seat.state === 'available' ? 'available' : 'taken';
    const price = typeof seat.price_cents === 'number' ? `, ${this.price(seat.price_cents)}` : '';
    return t('map.seat', { row: String(seat.row), number: String(seat.number), price, state: t(`map.${state}`) });
  }

  say(section, extra) {
    const cell = section.rows[section.focus.r]?.[section.focus.c];
    if (!cell) return;
    const text = extra ? `${this.describe(cell.seat)}. ${extra}` : this.describe(cell.seat);
    if (section.status.textContent !== text) section.status.textContent = text;
  }
}

function nearest(row, col) {
  let best = 0;
  row.forEach((cell, i) => {
    if (Math.abs(cell.col - col) < Math.abs(row[best].col - col)) best = i;
  });
  return best;
}
