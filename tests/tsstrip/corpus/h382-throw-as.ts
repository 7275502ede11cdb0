try { throw "x" as unknown } catch (e) { return e }
