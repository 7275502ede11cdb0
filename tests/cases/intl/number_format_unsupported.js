// Outside the supported subset: a RangeError that names the locale or the option.
const out = [];
for (const [loc, o] of [["de-DE", {}], [["fr", "en-US"], {}], ["en-GB", {}], ["en-US", { notation: "compact" }], ["en-US", { style: "unit", unit: "meter" }], ["en-US", { currencyDisplay: "name", style: "currency", currency: "USD" }], ["en-US", { maximumSignificantDigits: 3 }], ["en-US", { roundingMode: "floor" }], ["en-US", { numberingSystem: "arab" }]]) {
  try {
    new Intl.NumberFormat(loc, o);
    out.push("no error");
  } catch (e) {
    out.push(e.name + ": " + e.message);
  }
}
try { (1).toLocaleString("de-DE"); } catch (e) { out.push(e.name + ": " + e.message); }
return out;
