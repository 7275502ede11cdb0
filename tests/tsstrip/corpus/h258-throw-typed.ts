function f(): never { throw new TypeError("t") } try { f() } catch (e) { return (e as Error).name }
