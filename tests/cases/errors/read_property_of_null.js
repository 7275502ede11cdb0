// Reading a member of null names the expression, also across lines and for a method call.
const config = { db: null };
let msgs = [];
try { config.db.host; } catch (e) { msgs.push(e.message); }
try {
  config
    .db
    .connect();
} catch (e) { msgs.push(e.message); }
return msgs;
