const sym: unique symbol = Symbol("u"); declare const other: unique symbol; return sym.toString()
