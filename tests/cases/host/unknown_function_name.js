// Only registered names exist: an unknown member is not a function and no host is reached.
const r = [];
try { await echo.nope(); } catch (e) { r.push(e.name); }
try { await nogroup.f(); } catch (e) { r.push(e.name); }
r.push(typeof echo.nope, Object.keys(echo).join());
return r;
