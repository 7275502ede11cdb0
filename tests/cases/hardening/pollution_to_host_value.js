// Guest pollution attempts fail, and what the host receives has only own data.
try { Object.prototype.polluted = 1; } catch (e) {}
try { Object.defineProperty(Object.prototype, "toJSON", { value: () => "hijacked" }); } catch (e) {}
try { Array.prototype.push = () => 0; } catch (e) {}
const sent = { a: 1 };
const r = await echo.f(sent);
return [r, typeof r[0].polluted, typeof sent.polluted];
