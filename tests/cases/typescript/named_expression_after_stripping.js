// Types stripped to blanks leave the named expression as the user wrote it, without the `!`.
interface Cfg { db?: { host: string } }
const cfg: Cfg = {};
const h: string = cfg.db!.host;
