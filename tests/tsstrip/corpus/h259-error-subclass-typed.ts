class MyErr extends Error { constructor(msg: string, public_code?: number) { super(msg); this.name = "MyErr" } } try { throw new MyErr("m") } catch (e) { return String(e) }
