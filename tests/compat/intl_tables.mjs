// intl_tables.mjs - prints the en-US date-time pattern tables of src/worker/prelude_intl.js
// from Node's ICU (a maintainer's tool: run it with the Node whose output airlock matches,
// paste its output between the "generated" markers of prelude_intl.js, run the intl cases).
//
// Usage: node tests/compat/intl_tables.mjs
//
// DATE[w][y][m][d] is the pattern for weekday/year/month/day options (index 0 = absent, then the
// option values in the order of WEEKDAY, YEAR, MONTH, DAY below); TIME[class][h][m][s] for
// hour/minute/second with a 12-hour (class 0) or 24-hour (class 1) clock, suffixed "|" when a
// weekday-only date joins it with a space instead of ", ". Tokens in braces are fields.
process.env.TZ = 'UTC';
const at = new Date(Date.UTC(2024, 0, 2, 15, 4, 5)); // Tuesday, January 2, 2024 15:04:05
const fmt = (o) => new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', ...o }).format(at);
const WEEKDAY = [undefined, 'long', 'short', 'narrow'];
const YEAR = [undefined, 'numeric', '2-digit'];
const MONTH = [undefined, 'numeric', '2-digit', 'long', 'short', 'narrow'];
const DAY = [undefined, 'numeric', '2-digit'];
const NUM = [undefined, 'numeric', '2-digit'];
const dateTokens = [[/Tuesday/g, '{EEEE}'], [/Tue/g, '{EEE}'], [/January/g, '{MMMM}'], [/Jan/g, '{MMM}'],
  [/2024/g, '{y}'], [/\b24\b/g, '{yy}'], [/\b01\b/g, '{MM}'], [/\b02\b/g, '{dd}'], [/\b1\b/g, '{M}'],
  [/\b2\b/g, '{d}'], [/\bT\b/g, '{EEEEE}'], [/\bJ\b/g, '{MMMMM}']];
const timeTokens = [[/PM/g, '{a}'], [/\b15\b/g, '{HH}'], [/\b03\b/g, '{hh}'], [/\b3\b/g, '{h}'],
  [/\b04\b/g, '{mm}'], [/\b4\b/g, '{m}'], [/\b05\b/g, '{ss}'], [/\b5\b/g, '{s}']];
const tok = (s, t) => t.reduce((a, [re, r]) => a.replace(re, r), s);
const date = WEEKDAY.map((w) => YEAR.map((y) => MONTH.map((m) => DAY.map((d) =>
  (w || y || m || d ? tok(fmt({ weekday: w, year: y, month: m, day: d }), dateTokens) : '')))));
const time = [true, false].map((h12) => NUM.map((h) => NUM.map((mi) => NUM.map((s) => {
  if (!h && !mi && !s) {
    return '';
  }
  const o = { hour: h, minute: mi, second: s, hour12: h12 };
  const space = !fmt({ weekday: 'long', ...o }).startsWith('Tuesday, ');
  return tok(fmt(o), timeTokens) + (space ? '|' : '');
}))));
console.log(`        DATE = ${JSON.stringify(date)};`);
console.log(`        TIME = ${JSON.stringify(time)};`);
