interface S<in I, out O> { f(i: I): O } type P<in out T> = T; return 1
