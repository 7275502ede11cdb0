// Backtracking inside one C builtin never polls the interrupt handler: the supervisor kills it.
return /^(a+)+$/.test("a".repeat(40) + "b");
