const o = {}; let n = 0; o.x.y(n);
// On line 1 the position (1:29) is corrected for the wrapper and stays the one the engine
// reported before; only the message names o.x.
