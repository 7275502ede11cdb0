// Catching the interruption does not help: the run still ends with TIMEOUT.
for (let round = 0; round < 3; round++) {
  try { for (;;) {} } catch (e) { console.log("caught", String(e)); }
}
return "escaped";
