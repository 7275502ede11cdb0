class R<T> { static of<U>(x: U): R<U> { const r = new R<U>(); r.v = x; return r } v?: T } return R.of<number>(3).v
