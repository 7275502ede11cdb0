// Outside the supported subset: a RangeError that names the locale, time zone or option; and the
// default time zone is UTC whatever the host's (no host locale or zone leaks in).
const out = [];
for (const [loc, o] of [["de-DE", {}], ["en-US", { timeZone: "Europe/Paris" }], ["en-US", { timeZone: "America/New_York" }], ["en-US", { era: "long" }], ["en-US", { timeZoneName: "short" }], ["en-US", { fractionalSecondDigits: 2 }], ["en-US", { calendar: "japanese" }], ["en-US", { weekday: "long", month: "narrow" }], ["en-US", { hour: "numeric", second: "numeric" }]]) {
  try {
    new Intl.DateTimeFormat(loc, o);
    out.push("no error");
  } catch (e) {
    out.push(e.name + ": " + e.message);
  }
}
try { new Date(0).toLocaleDateString("ja-JP"); } catch (e) { out.push(e.name + ": " + e.message); }
out.push(new Intl.DateTimeFormat().resolvedOptions().timeZone, new Date(0).toLocaleString(), Intl.DateTimeFormat.supportedLocalesOf(["fr", "en-US"]).join());
return out;
