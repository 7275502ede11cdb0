// The hint follows the group object, not the name it is called through; spread calls too.
const t = tools;
let msgs = [];
try { t.nope(); } catch (e) { msgs.push(e.message); }
try { tools.nope(...[1]); } catch (e) { msgs.push(e.message); }
const local = { add: 1 };
try { local.nope(); } catch (e) { msgs.push(e.message); }
return msgs;
