class G<T> { static create<T>(): G<T> { return new G<T>() } } const c: typeof G = G; return c.create<number>() instanceof G
