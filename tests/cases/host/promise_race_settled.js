// The race is won by the fast call; the slow one is awaited too before returning.
const slow = sl.f();
const fast = echo.f("fast");
const winner = await Promise.race([slow, fast]);
await slow;
return winner;
