function mix<T extends new (...a: any[]) => object>(B: T) { return class extends B { mixed: boolean = true } } class X {} return new (mix(X))().mixed
