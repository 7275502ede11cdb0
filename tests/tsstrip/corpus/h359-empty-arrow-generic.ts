const f = <T,>() => 1; return f()
