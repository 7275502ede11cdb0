// Intl.DateTimeFormat (en-US, UTC) and Date's toLocale*String; the output is Node's (ICU).
const out = {};
const t = (name, f) => { try { out[name] = f(); } catch (e) { out[name] = "throws " + e.constructor.name; } };
const d = new Date(Date.UTC(2024, 0, 2, 15, 4, 5));
const midnight = new Date(Date.UTC(1999, 11, 31, 0, 0, 9));
const df = (o, ...x) => { const f = new Intl.DateTimeFormat("en-US", o); return x.map((v) => f.format(v)); };
t("shape", () => [Intl.DateTimeFormat.length, Intl.DateTimeFormat.name, Object.prototype.toString.call(new Intl.DateTimeFormat()), ["constructor", "format", "resolvedOptions"].map((k) => Object.hasOwn(Intl.DateTimeFormat.prototype, k)), Intl.DateTimeFormat() instanceof Intl.DateTimeFormat]);
t("default", () => df({}, d, midnight, 0));
const styles = ["full", "long", "medium", "short"];
t("dateStyle", () => styles.map((s) => df({ dateStyle: s }, d)[0]));
t("timeStyle", () => styles.map((s) => df({ timeStyle: s }, d, midnight).join(" | ")));
t("both styles", () => styles.map((s) => df({ dateStyle: s, timeStyle: styles[3 - styles.indexOf(s)] }, d)[0]));
t("hour cycles", () => [df({ timeStyle: "short", hour12: false }, d, midnight), df({ timeStyle: "medium", hourCycle: "h23" }, midnight), df({ timeStyle: "medium", hourCycle: "h11" }, midnight), df({ hour: "numeric", minute: "2-digit", hourCycle: "h24" }, midnight)]);
t("fields", () => [
  df({ year: "numeric", month: "long", day: "numeric" }, d), df({ weekday: "long", year: "numeric", month: "long", day: "numeric" }, d),
  df({ month: "short", day: "numeric" }, d), df({ year: "numeric", month: "short" }, d), df({ year: "numeric", month: "2-digit", day: "2-digit" }, d),
  df({ month: "long" }, d), df({ weekday: "short" }, d), df({ weekday: "narrow", day: "numeric" }, d), df({ year: "2-digit", month: "numeric" }, d),
  df({ hour: "numeric", minute: "2-digit" }, d, midnight), df({ hour: "2-digit", minute: "2-digit" }, d), df({ hour: "numeric" }, d),
  df({ hour: "numeric", minute: "numeric", hour12: false }, d), df({ minute: "2-digit", second: "2-digit" }, d),
  df({ month: "long", day: "numeric", hour: "numeric", minute: "2-digit" }, d), df({ month: "short", day: "numeric", hour: "numeric" }, d),
  df({ weekday: "long", hour: "numeric", minute: "2-digit" }, d), df({ year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" }, d),
].map((x) => x.join(" | ")));
t("resolvedOptions", () => [new Intl.DateTimeFormat().resolvedOptions(), new Intl.DateTimeFormat("en-US", { dateStyle: "full", timeStyle: "short" }).resolvedOptions(), new Intl.DateTimeFormat("en", { hour: "numeric", minute: "numeric", timeZone: "utc" }).resolvedOptions(), new Intl.DateTimeFormat("en-US", { hour: "numeric", hour12: false }).resolvedOptions(), new Intl.DateTimeFormat("en-US", { month: "long", weekday: "short", day: "2-digit" }).resolvedOptions()]);
t("locale strings", () => [d.toLocaleString(), d.toLocaleDateString(), d.toLocaleTimeString(), midnight.toLocaleTimeString(), d.toLocaleString("en-US", { dateStyle: "medium" }), d.toLocaleDateString("en-US", { month: "long", day: "numeric" }), d.toLocaleDateString("en-US", { hour: "numeric" }), d.toLocaleTimeString("en-US", { weekday: "short" }), d.toLocaleString("en-US", { month: "short" }), d.toLocaleString("en-US", { timeZone: "UTC" })]);
t("invalid date", () => [new Date(NaN).toLocaleString(), new Date(NaN).toLocaleDateString(), new Date(NaN).toLocaleTimeString()]);
t("format invalid", () => new Intl.DateTimeFormat().format(NaN));
t("format out of range", () => new Intl.DateTimeFormat().format(8.64e15 + 1));
t("format numbers", () => [new Intl.DateTimeFormat().format(0), new Intl.DateTimeFormat("en-US", { year: "numeric" }).format(-62198755200000), new Intl.DateTimeFormat("en-US", { dateStyle: "short" }).format(Date.UTC(2005, 5, 7))]);
t("bound format", () => ["2024-03-01T00:00:00Z", "2024-12-25T18:30:00Z"].map((s) => new Date(s)).map(new Intl.DateTimeFormat("en-US", { dateStyle: "medium" }).format));
t("styles and fields", () => new Intl.DateTimeFormat("en-US", { dateStyle: "short", month: "long" }));
t("timeStyle in toLocaleDateString", () => d.toLocaleDateString("en-US", { timeStyle: "short" }));
t("dateStyle in toLocaleTimeString", () => d.toLocaleTimeString("en-US", { dateStyle: "short" }));
t("bad option value", () => new Intl.DateTimeFormat("en-US", { month: "tiny" }));
t("not a date", () => Date.prototype.toLocaleString.call({}));
t("bad receiver", () => Intl.DateTimeFormat.prototype.resolvedOptions.call(new Intl.NumberFormat()));
return out;
