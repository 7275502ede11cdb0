// Errors that are not about a noted expression keep the engine's message.
let msgs = [];
try { [1, 2].map(3); } catch (e) { msgs.push(e.message); }
try { for (const x of 5) {} } catch (e) { msgs.push(e.message); }
try { undefinedName(); } catch (e) { msgs.push(e.message); }
return msgs;
