// A small line chart on <canvas>: a few series over the last minutes (or hours), no library.

export function drawChart(canvas, series, { windowS = 600 } = {}) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 600;
  const h = canvas.clientHeight || 160;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const pad = { l: 36, r: 8, t: 8, b: 20 };
  const now = performance.now() / 1000;
  const max = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.v)));
  const top = niceCeil(max);
  const x = (t) => pad.l + ((t - (now - windowS)) / windowS) * (w - pad.l - pad.r);
  const y = (v) => h - pad.b - (v / top) * (h - pad.t - pad.b);

  ctx.strokeStyle = '#dfe3ea';
  ctx.fillStyle = '#5b6577';
  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  for (const frac of [0, 0.5, 1]) {
    const v = top * frac;
    ctx.beginPath();
    ctx.moveTo(pad.l, y(v));
    ctx.lineTo(w - pad.r, y(v));
    ctx.stroke();
    ctx.fillText(Number.isInteger(v) ? String(v) : v.toFixed(1), 4, y(v) + 4);
  }
  // About six labels on the time axis, whatever the window (10 minutes or a whole evening).
  const step = [2, 5, 10, 15, 30, 60, 120, 240].find((m) => windowS / 60 / m <= 6) || 480;
  for (let m = 0; m <= windowS / 60; m += step) {
    ctx.textAlign = m === 0 ? 'right' : 'center';
    ctx.fillText(m === 0 ? 'now' : `-${m}m`, x(now - m * 60), h - 4);
  }
  ctx.textAlign = 'left';
  for (const s of series) {
    const pts = s.points.filter((p) => p.t >= now - windowS);
    if (!pts.length) continue;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 2;
    if (pts.length === 1) {
      // A single reading (the first minute of a sale) is a dot: a line needs two.
      ctx.fillStyle = s.color;
      ctx.beginPath();
      ctx.arc(x(pts[0].t), y(pts[0].v), 3, 0, 2 * Math.PI);
      ctx.fill();
      continue;
    }
    ctx.beginPath();
    pts.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p.v)) : ctx.moveTo(x(p.t), y(p.v))));
    ctx.stroke();
  }
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}
