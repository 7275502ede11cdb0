const make = <T,>(): T[] => []; return make<number>()
