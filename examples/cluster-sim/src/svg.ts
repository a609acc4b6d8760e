/** A line chart as SVG text, drawn from data (no hand-placed points). */
export interface Series {
  name: string;
  color: string;
  points: { x: number; y: number }[];
}

export function lineChart(options: { title: string; xLabel: string; yLabel: string; series: Series[] }): string {
  const W = 720;
  const H = 420;
  const m = { left: 70, right: 170, top: 40, bottom: 55 };
  const xs = options.series.flatMap((s) => s.points.map((p) => p.x));
  const ys = options.series.flatMap((s) => s.points.map((p) => p.y));
  const xMax = Math.max(...xs, 1);
  const yMax = niceCeil(Math.max(...ys, 1));
  const px = (x: number) => m.left + (x / xMax) * (W - m.left - m.right);
  const py = (y: number) => H - m.bottom - (y / yMax) * (H - m.top - m.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(options.title)}</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - m.right / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`,
    `<line x1="${m.left}" y1="${H - m.bottom}" x2="${W - m.right}" y2="${H - m.bottom}" stroke="black"/>`,
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${H - m.bottom}" stroke="black"/>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = (yMax / 5) * i;
    out.push(`<line x1="${m.left}" y1="${py(y)}" x2="${W - m.right}" y2="${py(y)}" stroke="#ddd"/>`);
    out.push(`<text x="${m.left - 6}" y="${py(y) + 4}" text-anchor="end">${Math.round(y)}</text>`);
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<text x="${px(x)}" y="${H - m.bottom + 16}" text-anchor="middle">${x}</text>`);
  }
  out.push(`<text x="${(m.left + W - m.right) / 2}" y="${H - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`);
  out.push(
    `<text x="16" y="${(m.top + H - m.bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(m.top + H - m.bottom) / 2})">${escapeXml(options.yLabel)}</text>`,
  );
  options.series.forEach((s, i) => {
    const path = s.points.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(" ");
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${path}"/>`);
    for (const p of s.points) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${s.color}"/>`);
    const ly = m.top + 10 + i * 20;
    out.push(`<line x1="${W - m.right + 12}" y1="${ly}" x2="${W - m.right + 32}" y2="${ly}" stroke="${s.color}" stroke-width="2"/>`);
    out.push(`<text x="${W - m.right + 38}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const f of [1, 2, 2.5, 5, 10]) if (f * p >= v) return f * p;
  return 10 * p;
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
