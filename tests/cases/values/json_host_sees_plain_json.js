// A host that speaks only JSON receives exactly JSON.stringify of the argument array.
const v = { a: [1, "x", null, true, 1.5e300], s: "\u00e9\n" };
const seen = await raw.f(v, 2);
return [seen === JSON.stringify([v, 2]), seen];
