// Computed members are named as written: the undefined value was rows[i].
const rows = [{ name: "a" }];
const i = 2;
const key = "name";
let msgs = [];
try { rows[i].name; } catch (e) { msgs.push(e.message); }
try { rows[i][key]; } catch (e) { msgs.push(e.message); }
try { rows[i].name.length; } catch (e) { msgs.push(e.message); }
try { rows[0].missing.length; } catch (e) { msgs.push(e.message); }
return msgs;
