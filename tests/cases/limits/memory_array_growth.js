const a = [];
for (;;) a.push({ n: a.length, s: "x" + a.length });
