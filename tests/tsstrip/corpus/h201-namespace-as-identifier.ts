const namespace = { a: 1 }; const module = { b: 2 }; return namespace.a + module.b
