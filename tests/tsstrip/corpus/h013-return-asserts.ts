function check(c: unknown, m?: string): asserts c { if (!c) throw new Error(m) } check(1); try { check(0, "no") } catch (e) { return (e as Error).message }
