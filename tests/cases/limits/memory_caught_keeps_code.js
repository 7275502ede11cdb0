// Catching the out-of-memory error does not help.
let kept = [];
for (let i = 0; i < 5; i++) {
  try { const a = []; for (;;) a.push(new Array(1000).fill(i)); } catch (e) { kept = []; }
}
return "escaped";
